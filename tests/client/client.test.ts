import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Address, toHex } from 'viem'
import { generatePrivateKey, type HDAccount, privateKeyToAccount } from 'viem/accounts'
import {
  AgentmarketError,
  createClient,
  MARKET_TYPES,
  type Task,
  verifyWebhook,
} from '../../packages/client/src/index.ts'
import { BUDGET_TYPES } from '../../packages/core/src/Budget.ts'
import { RATING_TYPES, REVIEW_TYPES } from '../../packages/core/src/BuyerReview.ts'
import { PAYER_PROOF_TYPES } from '../../packages/core/src/payments/PayerProof.ts'
import { WALLET_PROOF_TYPES } from '../../packages/core/src/WalletProof.ts'
import { type Anvil, paymentChain } from '../support/anvil.ts'
import { type MarketServer, startMarketServer } from '../support/process.ts'
import { scriptedTempo, tempoPayer } from '../support/tempo.ts'

// @agentmarket/client as a user runs it: against `bun start` on a fresh database, paying on anvil (chain 8453, the
// mock USDC at Base's address, one confirmation), the server settling x402 from its own key. Every flow goes through
// the client's public API only; the chain's balances and the server's answers are the verdicts.

let anvil: Anvil
let buyer: HDAccount
let seller: HDAccount
let server: MarketServer
let escrow: Address
const folder = mkdtempSync(join(tmpdir(), 'client-'))

beforeAll(async () => {
  const chain = await paymentChain(['buyer', 'seller', 'settler'], { funded: ['buyer'], escrow: true })
  escrow = chain.escrow
  ;({ anvil } = chain)
  ;({ buyer, seller } = chain.accounts)
  server = await startMarketServer({
    HOME: folder,
    DATABASE_URL: `file:${join(folder, 'market.db')}`,
    CHAIN_RPC_URL: anvil.rpcUrl,
    MIN_CONFIRMATIONS: '1',
    X402_SETTLER_KEY: toHex(chain.accounts.settler.getHdKey().privateKey ?? new Uint8Array()),
    WEBHOOK_ALLOW_PRIVATE: 'on',
    ESCROW_CONTRACT: escrow,
  })
})

afterAll(() => {
  server?.stop()
  anvil?.stop()
  rmSync(folder, { recursive: true, force: true })
})

const PRICE = 250_000n // 0.25 USDC, under the x402 client's default cap

/** A seller registered through the client, with its wallet set and a paid skill (reviewed when `reviewSeconds`). */
async function sellerNamed(name: string, reviewSeconds = 0) {
  const market = createClient({ baseUrl: server.base })
  const registration = await market.register({
    name,
    bio: `sells ${name} reports`,
    skills: [{ name: 'Report', type: 'purchasable', price: 0.25, review_seconds: reviewSeconds }],
  })
  const own = market.withApiKey(registration.apiKey)
  await own.updateAgent(name, { walletAddress: seller.address })
  return { registration, own }
}

/** The caught rejection of `promise`, which must be an AgentmarketError. */
async function refusal(promise: Promise<unknown>): Promise<AgentmarketError> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  )
  if (!(error instanceof AgentmarketError))
    throw new Error(`expected an AgentmarketError, got ${String(error)}`)
  return error
}

describe('@agentmarket/client against bun start', () => {
  test('behavior: refusals are AgentmarketError with the problem code, status, title and detail', async () => {
    const market = createClient({ baseUrl: server.base })
    const missing = await refusal(market.getAgent('nobody-here'))
    expect(missing).toMatchObject({ status: 404, code: 'agent_not_found', retryAfter: null })
    expect(missing.title.length).toBeGreaterThan(0)
    expect(missing.detail).toContain('nobody-here')
    expect(missing.problem?.instance).toBeDefined()

    await sellerNamed('errors-seller')
    const taken = await refusal(market.register({ name: 'ERRORS-seller' }))
    expect(taken).toMatchObject({ status: 409, code: 'name_taken' })
    const unknown = await refusal(market.order('errors-seller', { skill: 'repot' }))
    expect(unknown).toMatchObject({ status: 400, code: 'unknown_skill' })
    expect(unknown.detail).toContain('report')
    // A seller route without the key is refused before any request.
    expect(() => market.bearer()).toThrow('needs an API key')
  })

  test('behavior: search with filters finds the seller with its skills; the agent and its card read back', async () => {
    const { own } = await sellerNamed('search-seller')
    await own.heartbeat('search-seller')
    const market = createClient({ baseUrl: server.base })
    const found = await market.searchAgents({ q: 'search-seller', type: 'paid', status: 'live' })
    expect(found.agents.map((agent) => agent.name)).toEqual(['search-seller'])
    expect(found.agents[0]).toMatchObject({ skills: [{ slug: 'report', price: 0.25, type: 'purchasable' }] })
    expect((await market.searchAgents({ q: 'search-seller', type: 'free' })).agents).toEqual([])
    expect((await market.searchAgents({ q: 'search-seller', max_price: '0.1' })).agents).toEqual([])
    const agent = await market.getAgent('search-seller')
    expect(agent.walletAddress).toBe(seller.address)
    const card = await market.getAgentCard('search-seller')
    expect(card._extensions.commerce.chainId).toBe(8453)
  })

  test('behavior: an order carries a fresh Idempotency-Key per call, or the one given (a retry gets the same task)', async () => {
    await sellerNamed('idem-seller')
    const market = createClient({ baseUrl: server.base })
    const body = { skill: 'report', params: { topic: 'bun' } }
    const first = (await market.order('idem-seller', body, { idempotencyKey: 'order-1' })) as Task
    const again = (await market.order('idem-seller', body, { idempotencyKey: 'order-1' })) as Task
    const fresh = (await market.order('idem-seller', body)) as Task
    expect(first.status).toBe('pending_payment')
    expect(again.task_id).toBe(first.task_id)
    expect(fresh.task_id).not.toBe(first.task_id)
    const reused = await refusal(
      market.order('idem-seller', { skill: 'report' }, { idempotencyKey: 'order-1' }),
    )
    expect(reused.code).toBe('idempotency_key_reused')
  })

  test('behavior: a seller beats on an interval until stopped; its agent is live', async () => {
    const { own } = await sellerNamed('beating-seller')
    const beats: string[] = []
    let stop = () => {}
    await new Promise<void>((resolve) => {
      stop = own.startHeartbeat('beating-seller', {
        intervalMs: 20,
        onBeat: (beat) => {
          beats.push(beat.status)
          if (beats.length === 3) resolve()
        },
      })
    })
    stop()
    expect(beats.slice(0, 3)).toEqual(['live', 'live', 'live'])
    expect((await own.getAgent('beating-seller')).heartbeat.status).toBe('live')
    // A seller client without a key cannot beat: the error reaches onError, not a crash.
    const errors: unknown[] = []
    await new Promise<void>((resolve) => {
      const stopKeyless = createClient({ baseUrl: server.base }).startHeartbeat('beating-seller', {
        intervalMs: 20,
        onError: (error) => {
          errors.push(error)
          stopKeyless()
          resolve()
        },
      })
    })
    expect(String(errors[0])).toContain('needs an API key')
  })

  test('behavior: card-and-verify pays the seller the price; the seller delivers; the buyer waits, accepts and rates', async () => {
    const { own: sellerOwn } = await sellerNamed('review-seller', 3600)
    const market = createClient({ baseUrl: server.base })
    const [buyerBefore, sellerBefore] = await Promise.all([
      anvil.usdcOf(buyer.address),
      anvil.usdcOf(seller.address),
    ])

    const paid = await market.buy(
      'review-seller',
      { skill: 'report', params: { q: 'rust' } },
      anvil.walletFor(buyer),
    )
    expect(paid).toMatchObject({ status: 'paid', params: { q: 'rust' } })
    expect(paid.payment).toMatchObject({ method: 'transfer', from: buyer.address, to: seller.address })
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
    expect(await anvil.usdcOf(buyer.address)).toBe(buyerBefore - PRICE)

    const queue = await sellerOwn.queue('review-seller', { status: 'paid' })
    expect(queue.tasks.map((task) => ('task_id' in task ? task.task_id : ''))).toEqual([paid.task_id])
    const waiting = market.waitForTask('review-seller', paid.task_id, { intervalMs: 20 })
    await sellerOwn.deliver('review-seller', paid.task_id, 'https://results.example/1')
    const delivered = await waiting
    expect(delivered).toMatchObject({ status: 'delivered', result_url: 'https://results.example/1' })

    const accepted = await market.review(delivered, 'accept', buyer)
    expect(accepted.status).toBe('completed')
    const rated = await market.rate(accepted, 5, buyer, 'thorough')
    expect(rated.rating).toMatchObject({ score: 5, comment: 'thorough', wallet: buyer.address })
    const ratings = await market.listRatings('review-seller')
    expect(ratings.ratings.map((rating) => rating.score)).toEqual([5])
  })

  test('behavior: escrow-first: the deposit holds the price in the escrow, and the task is paid by it', async () => {
    await sellerNamed('escrow-seller')
    const market = createClient({ baseUrl: server.base })
    const task = (await market.order('escrow-seller', { skill: 'report' })) as Task
    expect(task.payment.escrow_contract).toBe(escrow)
    const [escrowBefore, sellerBefore] = await Promise.all([
      anvil.usdcOf(escrow),
      anvil.usdcOf(seller.address),
    ])
    const paid = await market.payTaskByEscrow(task, anvil.walletFor(buyer))
    expect(paid).toMatchObject({ task_id: task.task_id, status: 'paid' })
    expect(paid.payment).toMatchObject({ method: 'escrow', from: buyer.address })
    expect(await anvil.usdcOf(escrow)).toBe(escrowBefore + PRICE)
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore)
  })

  test('behavior: a payer proof naming another task is refused before any money moves', async () => {
    await sellerNamed('proof-seller')
    const market = createClient({ baseUrl: server.base })
    const task = (await market.order('proof-seller', { skill: 'report' })) as Task
    const proof = task.payment.payer_proof
    if (!proof) throw new Error('the pending task shows no payer proof')
    const forged = {
      ...task,
      payment: {
        ...task.payment,
        payer_proof: { ...proof, message: { ...proof.message, task: 'task_other' } },
      },
    }
    // Transactions the buyer has sent, mined or not: a refusal sends none.
    const sent = () => anvil.publicClient.getTransactionCount({ address: buyer.address, blockTag: 'pending' })
    const before = await sent()
    await expect(market.payTask(forged, anvil.walletFor(buyer))).rejects.toThrow(
      'names another agent or task',
    )
    expect(await sent()).toBe(before)
    // A template of another message is refused the same way.
    const other = {
      ...task,
      payment: { ...task.payment, payer_proof: { ...proof, primaryType: 'SpendingBudget' } },
    }
    await expect(market.payTask(other as Task, anvil.walletFor(buyer))).rejects.toThrow('not PaymentClaim')
    expect(await sent()).toBe(before)
    expect((await market.getTask('proof-seller', task.task_id)).status).toBe('pending_payment')
  })

  test('behavior: x402 through @x402/fetch pays the seller; the task is paid with the settlement', async () => {
    await sellerNamed('x402-seller')
    const market = createClient({ baseUrl: server.base })
    const sellerBefore = await anvil.usdcOf(seller.address)
    const { task, settlement } = await market.orderWithX402(
      'x402-seller',
      'report',
      { params: { q: 'go' } },
      { account: buyer },
    )
    expect(settlement).toMatchObject({ success: true, payer: buyer.address })
    const read = await market.waitForTask('x402-seller', (task as Task).task_id, {
      intervalMs: 20,
      until: (current) => current.status === 'paid',
    })
    expect(read.payment).toMatchObject({
      method: 'x402',
      from: buyer.address,
      tx_hash: settlement?.transaction,
    })
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
  })

  test("behavior: a seller's webhook delivery verifies with its secret; a tampered body or another secret does not", async () => {
    const received: { headers: Headers; body: string }[] = []
    let arrived = () => {}
    const delivery = new Promise<void>((resolve) => {
      arrived = resolve
    })
    const receiver = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(request) {
        received.push({ headers: request.headers, body: await request.text() })
        arrived()
        return new Response('ok')
      },
    })
    try {
      const { own } = await sellerNamed('hook-seller')
      const endpoint = await own.addWebhook('hook-seller', {
        url: `http://127.0.0.1:${receiver.port}/hook`,
        events: ['task.paid'],
      })
      const market = createClient({ baseUrl: server.base })
      const paid = await market.buy('hook-seller', { skill: 'report' }, anvil.walletFor(buyer))
      await delivery
      const [first] = received
      if (!first) throw new Error('no delivery')
      const event = verifyWebhook(endpoint.secret, first.headers, first.body)
      expect(event.type).toBe('task.paid')
      expect(event.data.task.task_id).toBe(paid.task_id)
      expect(() =>
        verifyWebhook(endpoint.secret, first.headers, first.body.replace('paid', 'PAID')),
      ).toThrow()
      const other = `whsec_${Buffer.from('another secret of 32 bytes long!').toString('base64')}`
      expect(() => verifyWebhook(other, first.headers, first.body)).toThrow()
    } finally {
      receiver.stop(true)
    }
  })
})

describe("a buyer's task webhook", () => {
  test('behavior: the buyer hears its task completed, signed with the secret it alone was given', async () => {
    const received: { headers: Headers; body: string }[] = []
    let arrived = () => {}
    const delivery = new Promise<void>((resolve) => {
      arrived = resolve
    })
    const receiver = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(request) {
        received.push({ headers: request.headers, body: await request.text() })
        arrived()
        return new Response('ok')
      },
    })
    try {
      const { registration } = await sellerNamed('watched-seller')
      const sellerKeyed = createClient({ baseUrl: server.base, apiKey: registration.apiKey })
      const market = createClient({ baseUrl: server.base })
      const paid = await market.buy('watched-seller', { skill: 'report' }, anvil.walletFor(buyer))
      const url = `http://127.0.0.1:${receiver.port}/task`
      const hook = await market.addTaskWebhook('watched-seller', paid.task_id, {
        url,
        events: ['task.completed'],
      })
      await sellerKeyed.deliver('watched-seller', paid.task_id, 'https://results.example/watched')
      await delivery
      const [first] = received
      if (!first) throw new Error('no delivery')
      const event = verifyWebhook(hook.secret, first.headers, first.body)
      expect(event).toMatchObject({
        type: 'task.completed',
        data: { task: { task_id: paid.task_id, result_url: 'https://results.example/watched' } },
      })
    } finally {
      receiver.stop(true)
    }
  })
})

describe('spending budgets', () => {
  test("behavior: the owner's signed budget is set; orders naming the buyer carry its key; one past the day is budget_exceeded", async () => {
    await sellerNamed('budget-seller')
    const market = createClient({ baseUrl: server.base })
    const registration = await market.register({ name: 'budget-bot' })
    // The owner pairs the agent, the client signing the wallet proof of the request for the market the card names
    // (its BASE_URL, not the address called).
    const owner = privateKeyToAccount(generatePrivateKey())
    const card = await market.getAgentCard('budget-bot')
    const marketUrl = card._extensions.commerce.payer_proof.message.market
    const asOwner = createClient({ baseUrl: server.base, market: marketUrl })
    const paired = await asOwner.pairAgent('budget-owner', registration.pairingCode, owner)
    expect(paired.user).toMatchObject({ username: 'budget-owner' })

    const expires = new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString()
    const terms = { agent: 'budget-bot', per_task_max: '1.25', per_day_max: 0.5, expires_at: expires }
    const set = await market.setBudget(terms, owner)
    expect(set).toMatchObject({
      agent: 'budget-bot',
      per_task_max: 1.25,
      per_day_max: 0.5,
      signer: owner.address,
    })
    // Another wallet's signature is refused.
    const stranger = privateKeyToAccount(generatePrivateKey())
    expect((await refusal(market.setBudget(terms, stranger))).status).toBe(401)

    const buyerBot = market.withApiKey(registration.apiKey)
    const order = { skill: 'report', buyer: 'budget-bot' }
    expect((await refusal(market.order('budget-seller', order))).code).toBe('buyer_key_required')
    await buyerBot.order('budget-seller', order)
    await buyerBot.order('budget-seller', order)
    const over = await refusal(buyerBot.order('budget-seller', order))
    expect(over).toMatchObject({ status: 403, code: 'budget_exceeded' })
    expect(over.problem?.budget).toMatchObject({ reason: 'per_day', remaining_today: 0 })
    expect(await buyerBot.getBudget('budget-bot')).toMatchObject({ held_today: 0.5, remaining_today: 0 })
  })
})

describe('MPP', () => {
  test('behavior: mppx pays USDC.e on the scripted Tempo node; the task is paid by MPP with its receipt, once', async () => {
    const node = scriptedTempo()
    const rpc = await node.serve()
    const mppFolder = mkdtempSync(join(tmpdir(), 'client-mpp-'))
    const mppServer = await startMarketServer({
      HOME: mppFolder,
      DATABASE_URL: `file:${join(mppFolder, 'market.db')}`,
      TEMPO_RPC_URL: rpc.url,
    })
    try {
      const market = createClient({ baseUrl: mppServer.base })
      const { apiKey } = await market.register({
        name: 'mpp-seller',
        skills: [{ name: 'Report', type: 'purchasable', price: 0.25 }],
      })
      await market.withApiKey(apiKey).updateAgent('mpp-seller', { walletAddress: tempoPayer(1).address })
      const tempo = { account: tempoPayer(2), getClient: () => node.client('client') }
      const { task, receipt } = await market.orderWithMpp(
        'mpp-seller',
        'report',
        { params: { q: 'zig' } },
        { tempo },
      )
      expect(task).toMatchObject({ status: 'paid', params: { q: 'zig' } })
      expect(task.payment).toMatchObject({ method: 'mpp' })
      expect(receipt).toBeString()
      expect(node.mined()).toHaveLength(1)
      expect((await market.getTask('mpp-seller', task.task_id)).status).toBe('paid')
    } finally {
      mppServer.stop()
      await rpc.stop()
      rmSync(mppFolder, { recursive: true, force: true })
    }
  })
})

describe('what the client signs', () => {
  test("behavior: the client's EIP-712 types are the marketplace's", () => {
    expect(MARKET_TYPES).toEqual({
      ...PAYER_PROOF_TYPES,
      ...REVIEW_TYPES,
      ...RATING_TYPES,
      ...BUDGET_TYPES,
      ...WALLET_PROOF_TYPES,
    } as never)
  })
})

describe('Retry-After', () => {
  // A market allowing one read per 4 seconds per client: the second read is refused with Retry-After.
  let limited: MarketServer
  const limitedFolder = mkdtempSync(join(tmpdir(), 'client-limits-'))
  beforeAll(async () => {
    limited = await startMarketServer({
      HOME: limitedFolder,
      DATABASE_URL: `file:${join(limitedFolder, 'market.db')}`,
      RATE_LIMITS: 'on',
      RATE_LIMIT_POLICIES: 'read=1/4,register=100/60',
    })
    await createClient({ baseUrl: limited.base }).register({ name: 'limited-seller' })
  })
  afterAll(() => {
    limited?.stop()
    rmSync(limitedFolder, { recursive: true, force: true })
  })

  test('behavior: a 429 past the longest wait is an AgentmarketError with code rate_limited and retryAfter', async () => {
    const market = createClient({ baseUrl: limited.base, maxRetryWaitSeconds: 0 })
    const refused = await (async () => {
      // Reads until one is refused: the first may find the bucket full again.
      for (let attempt = 0; attempt < 5; attempt++) {
        const answer = await market.getAgent('limited-seller').catch((error: unknown) => error)
        if (answer instanceof AgentmarketError) return answer
      }
      throw new Error('no read was refused')
    })()
    expect(refused).toMatchObject({ status: 429, code: 'rate_limited' })
    expect(refused.retryAfter).toBeGreaterThanOrEqual(1)
  })

  test('behavior: a 429 with a short Retry-After is sent again after it, and the call answers', async () => {
    const statuses: number[] = []
    const spying = async (request: Request) => {
      const response = await fetch(request)
      statuses.push(response.status)
      return response
    }
    const market = createClient({ baseUrl: limited.base, fetch: spying, retries: 4, maxRetryWaitSeconds: 10 })
    // Reads until one was refused on the way: each read must still answer the agent.
    for (let read = 0; read < 5 && !statuses.includes(429); read++)
      expect((await market.getAgent('limited-seller')).name).toBe('limited-seller')
    expect(statuses).toContain(429)
    expect(statuses.at(-1)).toBe(200)
  })
})
