import { afterAll, beforeAll, describe, expect, setSystemTime, test } from 'bun:test'
import type { Store, X402Facilitator } from '@agentmarket/core'
import { viemChain, viemX402Facilitator } from '@agentmarket/core/viem'
import { libsqlStore, openDatabase } from '@agentmarket/store-libsql'
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  encodePaymentSignatureHeader,
} from '@x402/core/http'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { Challenge, Credential } from 'mppx'
import { Mppx as MppxClient, tempo as tempoClient } from 'mppx/client'
import {
  concat,
  decodeFunctionData,
  encodeFunctionData,
  type Hex,
  parseAbi,
  parseSignature,
  toHex,
} from 'viem'
import type { HDAccount } from 'viem/accounts'
import { testApp } from '../../packages/server/src/testing/http.ts'
import { order as a2aOrder, rpc, wireMessage } from '../support/a2aClient.ts'
import { type Anvil, paymentChain, USDC_ADDRESS } from '../support/anvil.ts'
import { type ScriptedTempo, scriptedTempo, TEMPO_USDC_E, tempoPayer } from '../support/tempo.ts'
import { signedPayment } from '../support/x402.ts'

// Stop 54's independent attack on the money paths (x402 sentByOthers, MPP hashes past the expiry, leaks). Each test
// drives in-process apps over a real anvil (x402) or the scripted Tempo node (MPP). A `test.failing` is an attack
// that works today: its comment names the defect.

const PRICE = 500_000n
const SKILL = { name: 'Deep Search', type: 'purchasable', price: '0.5' }
const PATH = '/api/agents/seller/tasks/deep-search'

let anvil: Anvil
let buyer: HDAccount
let seller: HDAccount
let settlerA: HDAccount
let settlerB: HDAccount
let thief: HDAccount

beforeAll(async () => {
  const roles = ['buyer', 'seller', 'settlerA', 'settlerB', 'thief'] as const
  const chain = await paymentChain(roles, { funded: ['buyer', 'thief'] })
  ;({ anvil } = chain)
  ;({ buyer, seller, settlerA, settlerB, thief } = chain.accounts)
})

afterAll(() => anvil?.stop())

const facilitator = (account: HDAccount, receiptTimeoutMs?: number) =>
  viemX402Facilitator({ rpcUrl: anvil.rpcUrl, chain: anvil.chain, account, receiptTimeoutMs })

type Market = Awaited<ReturnType<typeof market>>

/**
 * A market taking x402 on anvil where `seller` sells Deep Search (0.5 USDC) to its wallet; `store` shared makes it a
 * second node of the same market.
 */
async function market(x402: X402Facilitator, node: { store?: Store; second?: boolean } = {}) {
  const app = await testApp('2026-06-01T12:00:00.000Z', {
    chain: viemChain({ rpcUrl: anvil.rpcUrl, timeoutMs: 5_000 }),
    chainConfig: { minConfirmations: 1 },
    x402: { facilitator: x402 },
    ...(node.store ? { store: node.store } : {}),
  })
  if (node.second) return { ...app, key: '', queue: () => Promise.reject(new Error('ask the first node')) }
  const { key } = await app.register('seller', { skills: [SKILL] })
  await app.call('PUT', '/api/agents/seller', { key, body: { walletAddress: seller.address } })
  const queue = async () =>
    (await app.call('GET', '/api/agents/seller/tasks?status=all', { key })).json as {
      total: number
      tasks: { task_id: string; status: string }[]
    }
  return { ...app, key, queue }
}

const newStore = async () => libsqlStore(await openDatabase(':memory:'))

async function offerOf(app: Market, path = PATH): Promise<PaymentRequirements> {
  const answer = await app.call('POST', path, { body: {} })
  expect(answer.status).toBe(402)
  const [accepted] = decodePaymentRequiredHeader(answer.headers.get('payment-required') ?? '').accepts
  if (!accepted) throw new Error('no x402 offer')
  return accepted
}

const payWith = (
  app: Market,
  payload: PaymentPayload,
  options: { path?: string; body?: unknown; headers?: Record<string, string> } = {},
) =>
  app.call('POST', options.path ?? PATH, {
    body: options.body ?? {},
    headers: { 'payment-signature': encodePaymentSignatureHeader(payload), ...options.headers },
  })

/** Our facilitator with `meanwhile` run once between a valid verification and the settlement. */
const frontRun = (inner: X402Facilitator, meanwhile: () => Promise<void>): X402Facilitator => {
  let pending: (() => Promise<void>) | null = meanwhile
  return {
    async verify(payload, requirements) {
      const verdict = await inner.verify(payload, requirements)
      const run = verdict.isValid ? pending : null
      pending = run ? null : pending
      await run?.()
      return verdict
    },
    settle: (...args) => inner.settle(...args),
  }
}

/** Every transaction `account` sent and the chain has not mined, read from the pending block. */
async function pendingFrom(account: HDAccount, count: number) {
  const deadline = performance.now() + 10_000
  while (performance.now() < deadline) {
    const block = await anvil.publicClient.getBlock({ blockTag: 'pending', includeTransactions: true })
    const found = block.transactions.filter(
      (transaction) => transaction.from.toLowerCase() === account.address.toLowerCase(),
    )
    if (found.length >= count) return found
    await Bun.sleep(5)
  }
  throw new Error('no settlement reached the mempool')
}

const settlementOf = (answer: { headers: Headers }) =>
  decodePaymentResponseHeader(answer.headers.get('payment-response') ?? '').transaction as Hex

describe('x402: one authorization, two markets (the seller lists Deep Search on both, one wallet)', () => {
  // Market B verifies the buyer's authorization, then market A (another marketplace, or the seller's own x402
  // endpoint) settles the very same authorization for its own order. B's fill reverts (nonce used). B once recorded
  // A's transaction as its own settlement (sentByOthers): one transfer, two paid orders. Now B sent nothing, so the
  // transaction that used the authorization pays nothing here: 402 nonce_already_used.
  test("attack: the same authorization settled meanwhile by another market for its order does not pay this market's order", async () => {
    const appA = await market(facilitator(settlerA))
    let payload: PaymentPayload | null = null
    let paidA: Awaited<ReturnType<typeof payWith>> | null = null
    const appB = await market(
      frontRun(facilitator(settlerB), async () => {
        paidA = await payWith(appA, payload as PaymentPayload)
      }),
    )
    const accepted = await offerOf(appB)
    payload = await signedPayment(accepted, buyer)
    const sellerBefore = await anvil.usdcOf(seller.address)
    const answerB = await payWith(appB, payload, { body: { params: { q: 'the second order' } } })
    expect((paidA as unknown as { status: number }).status).toBe(201)
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
    // One transfer: at most one of the two markets may count it as its order's payment (B names A's settlement).
    const settledA = settlementOf(paidA as unknown as { headers: Headers })
    expect(answerB.json?.payment?.tx_hash ?? null, `B: ${answerB.status}`).not.toBe(settledA)
    expect(answerB.status, JSON.stringify(answerB.json)).toBe(402)
    expect((await appB.queue()).tasks.filter((task) => task.status === 'paid')).toEqual([])
  })

  test('attack: two nodes of one market (one store): the authorization verified by node 2 is settled meanwhile by node 1 for another order: node 2 answers 409, one order paid', async () => {
    const store = await newStore()
    const node1 = await market(facilitator(settlerA), { store })
    let payload: PaymentPayload | null = null
    let paid1: { status: number } | null = null
    const node2 = await market(
      frontRun(facilitator(settlerB), async () => {
        paid1 = await payWith(node1, payload as PaymentPayload, { body: { params: { q: 'node 1' } } })
      }),
      { store, second: true },
    )
    payload = await signedPayment(await offerOf(node2), buyer)
    const sellerBefore = await anvil.usdcOf(seller.address)
    const answer2 = await payWith(node2, payload, { body: { params: { q: 'node 2' } } })
    expect((paid1 as unknown as { status: number }).status).toBe(201)
    expect(answer2.status, JSON.stringify(answer2.json)).toBe(409)
    expect(answer2.json.code).toBe('authorization_already_used')
    expect(answer2.text).not.toContain('task_')
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
    expect((await node1.queue()).tasks.map((task) => task.status)).toEqual(['paid'])
  })

  // An authorization whose settlement by another market is in the mempool, sent to this market meanwhile: the fill
  // reverts against the pending state while the latest state still shows the nonce unused. It was a 500
  // (revertedBecause rethrew the fill's error); the state is now read where the fill ran (pending): 402 nonce used.
  test('attack: an observer copies the pending settlement of market A from the mempool and sends it to market B at once: B answers a problem that is not a 500, and only A is paid', async () => {
    const appA = await market(facilitator(settlerA, 20_000))
    const appB = await market(facilitator(settlerB, 20_000))
    const payload = await signedPayment(await offerOf(appA), buyer)
    const sellerBefore = await anvil.usdcOf(seller.address)
    await anvil.testClient.setAutomine(false)
    let answers: Awaited<ReturnType<typeof payWith>>[] = []
    try {
      const victim = payWith(appA, payload)
      await pendingFrom(settlerA, 1)
      const observer = await payWith(appB, payload, { body: { params: { q: 'observer' } } })
      await anvil.testClient.mine({ blocks: 1 })
      answers = [await victim, observer]
    } finally {
      await anvil.testClient.setAutomine(true)
    }
    const [paidA, answerB] = answers
    expect(paidA?.status).toBe(201)
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
    expect((await appB.queue()).total).toBe(0)
    // B reads the state its fill ran against (pending): the authorization is used there.
    expect(answerB?.status, JSON.stringify(answerB?.json)).toBe(402)
    expect(answerB?.json.detail).toContain('nonce_already_used')
  })
})

/**
 * Runtime code of a forwarder: it calls the token with its own call data (all gas) and reverts when that call fails, as
 * a multicall or a smart account would send someone's authorization.
 */
const forwarderCode = (token: Hex) =>
  `0x366000600037600060003660006000${'73'}${token.slice(2)}5af115602b57005b60006000fd` as Hex

/** The EIP-3009 call of a payload's authorization (split signature), as anyone holding it may send it. */
function authorizationCallOf(payload: PaymentPayload): Hex {
  const { authorization, signature } = payload.payload as {
    authorization: Record<'from' | 'to' | 'value' | 'validAfter' | 'validBefore' | 'nonce', string>
    signature: Hex
  }
  const { r, s, v } = parseSignature(signature)
  return encodeFunctionData({
    abi: parseAbi([
      'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
    ]),
    args: [
      authorization.from as Hex,
      authorization.to as Hex,
      BigInt(authorization.value),
      BigInt(authorization.validAfter),
      BigInt(authorization.validBefore),
      authorization.nonce as Hex,
      Number(v),
      r,
      s,
    ],
  })
}

/**
 * A JSON-RPC proxy in front of anvil for a settler, as a node that fills and estimates a transaction against the latest
 * block (geth's default for eth_estimateGas) rather than anvil's pending one: eth_fillTransaction is not offered (viem
 * falls back to its reads), and eth_estimateGas without a block is asked at `latest`.
 */
function latestStateRpc() {
  const server = Bun.serve({
    port: 0,
    async fetch(request) {
      const body = (await request.json()) as { id: number; method: string; params?: unknown[] }
      if (body.method === 'eth_fillTransaction')
        return Response.json({
          jsonrpc: '2.0',
          id: body.id,
          error: { code: -32601, message: 'Method not found' },
        })
      if (body.method === 'eth_estimateGas' && body.params?.length === 1) body.params.push('latest')
      const upstream = await fetch(anvil.rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      return new Response(await upstream.text(), { headers: { 'content-type': 'application/json' } })
    },
  })
  return { url: `http://localhost:${server.port}`, stop: () => server.stop(true) }
}

describe('x402: one authorization sent by its payer to two markets at once', () => {
  // KNOWN LIMIT (SECURITY.md, "one authorization, two servers"): the payer sends one authorization to two markets at
  // once (or to a market and the seller's own x402 endpoint) paying the same wallet. Both verify it, both broadcast
  // their settlement (each node fills against its latest block); one is mined, the other reverts. The market whose
  // settlement reverted finds the other transaction by its AuthorizationUsed log and judges it as its own payment
  // (paidBy): both orders paid by one transfer. On chain it cannot be told from a watcher who front-runs the market's
  // own pending settlement with the same call (the buyer's money then reached the seller for this order, and
  // refusing would leave the buyer charged and unserved, at the will of any observer of the mempool): the market
  // protects the buyer against the observer. A seller closes this by a payout wallet of its own per market. This
  // test fails while the limit stands; if it passes, the limit is gone: make it an ordinary test.
  test.failing('attack: one authorization sent to two markets at once: one order paid, the other refused', async () => {
    const rpc = latestStateRpc()
    try {
      const viaLatest = (account: HDAccount) =>
        viemX402Facilitator({ rpcUrl: rpc.url, chain: anvil.chain, account, receiptTimeoutMs: 20_000 })
      const appA = await market(viaLatest(settlerA))
      const appB = await market(viaLatest(settlerB))
      const payload = await signedPayment(await offerOf(appA), buyer)
      const sellerBefore = await anvil.usdcOf(seller.address)
      await anvil.testClient.setAutomine(false)
      let answers: Awaited<ReturnType<typeof payWith>>[] = []
      try {
        const both = [payWith(appA, payload), payWith(appB, payload)]
        await pendingFrom(settlerA, 1)
        await pendingFrom(settlerB, 1)
        await anvil.testClient.mine({ blocks: 1 })
        answers = await Promise.all(both)
      } finally {
        await anvil.testClient.setAutomine(true)
      }
      expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
      for (const app of [appA, appB]) {
        app.clock.advance(60_000)
        await app.market.recheckPendingPayments()
      }
      const paid = [...(await appA.queue()).tasks, ...(await appB.queue()).tasks].filter(
        (task) => task.status === 'paid',
      )
      const told = answers.map((answer) => `${answer.status} ${answer.json?.payment?.tx_hash}`).join(', ')
      expect(paid.length, told).toBe(1)
    } finally {
      rpc.stop()
    }
  })
})

describe('x402: Idempotency-Key and receipts seen by an observer', () => {
  test("attack: an observer who knows a buyer's Idempotency-Key sends the buyer's settled authorization (rebuilt from the receipt) with it, then its own fresh authorization with it and the same body: 409 without a task id, then its own new order; never the buyer's task", async () => {
    const app = await market(facilitator(settlerA))
    const accepted = await offerOf(app)
    const key = 'order-0001'
    const body = { params: { q: "the buyer's private query" } }
    const victim = await payWith(app, await signedPayment(accepted, buyer), {
      body,
      headers: { 'idempotency-key': key },
    })
    expect(victim.status).toBe(201)
    const victimTask = victim.json.task_id as string
    // What the observer sees: the PAYMENT-RESPONSE names only the transaction, the network and the payer.
    const receipt = decodePaymentResponseHeader(victim.headers.get('payment-response') ?? '')
    expect(JSON.stringify(receipt)).not.toContain(victimTask)
    const transaction = await anvil.publicClient.getTransaction({ hash: receipt.transaction as Hex })
    const copied = {
      ...(await signedPayment(accepted, buyer)),
      payload: rebuilt(transaction.input),
    } as PaymentPayload
    const replayed = await payWith(app, copied, { body, headers: { 'idempotency-key': key } })
    expect(replayed.status).toBe(409)
    expect(replayed.text).not.toContain(victimTask)
    const own = await payWith(app, await signedPayment(accepted, thief), {
      body,
      headers: { 'idempotency-key': key },
    })
    expect(own.status).toBe(201)
    expect(own.json.task_id).not.toBe(victimTask)
    expect(own.json.buyer_wallet).toBe(thief.address)
  })
})

/** The payload part (authorization and signature) of a transferWithAuthorization call's data. */
function rebuilt(input: Hex) {
  const call = decodeFunctionData({
    abi: parseAbi([
      'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
    ]),
    data: input,
  })
  const [from, to, value, validAfter, validBefore, nonce, v, r, s] = call.args
  return {
    authorization: Object.fromEntries(
      Object.entries({ from, to, value, validAfter, validBefore, nonce }).map(([name, field]) => [
        name,
        String(field),
      ]),
    ),
    signature: concat([r, s, toHex(v, { size: 1 })]),
  }
}

describe('x402 inside A2A (the a2a-x402 round of a stored task), one authorization, two markets', () => {
  // The same as over HTTP: market B's A2A task was paid by the transaction market A sent for its own order with the
  // very authorization (sentByOthers). B's task stays pending_payment, asked to pay again.
  test("attack: an A2A task on market B paid with an authorization market A settles meanwhile for its order: B's task is not paid", async () => {
    const appA = await market(facilitator(settlerA))
    let payload: PaymentPayload | null = null
    const appB = await market(
      frontRun(facilitator(settlerB), async () => {
        expect((await payWith(appA, payload as PaymentPayload)).status).toBe(201)
      }),
    )
    const ordered = await a2aOrder(appB, '/a2a/agents/seller', { skill: 'deep-search' })
    const required = ordered.status.message.metadata['x402.payment.required'] as {
      accepts: PaymentRequirements[]
    }
    const accepted = required.accepts[0] as PaymentRequirements
    payload = await signedPayment(accepted, buyer)
    const sellerBefore = await anvil.usdcOf(seller.address)
    await rpc(
      appB,
      '/a2a/agents/seller',
      'SendMessage',
      wireMessage(
        {},
        {
          taskId: ordered.id,
          metadata: { 'x402.payment.status': 'payment-submitted', 'x402.payment.payload': payload },
        },
      ),
    )
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
    const view = (await appB.call('GET', `/api/agents/seller/tasks/${ordered.id}`)).json
    expect(view.status, JSON.stringify(view.payment)).toBe('pending_payment')
  })
})

describe('x402: the authorization sent meanwhile in a transaction that reverted', () => {
  test("attack: someone holding the buyer's authorization sends it between the verification and the fill in a transaction that runs out of gas (reverted, nonce unused): the market's own settlement pays the order once, never the reverted transaction", async () => {
    let payload: PaymentPayload | null = null
    let reverted: Hex = '0x'
    const app = await market(
      frontRun(facilitator(settlerA), async () => {
        const hash = await anvil.walletFor(thief).sendTransaction({
          to: USDC_ADDRESS,
          data: authorizationCallOf(payload as PaymentPayload),
          gas: 40_000n,
        })
        const receipt = await anvil.publicClient.waitForTransactionReceipt({ hash })
        expect(receipt.status).toBe('reverted')
        reverted = hash
      }),
    )
    payload = await signedPayment(await offerOf(app), buyer)
    const sellerBefore = await anvil.usdcOf(seller.address)
    const answer = await payWith(app, payload)
    expect(answer.status, JSON.stringify(answer.json)).toBe(201)
    expect(answer.json.payment.tx_hash).not.toBe(reverted)
    expect(settlementOf(answer)).toBe(answer.json.payment.tx_hash)
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
    expect((await payWith(app, payload)).status).toBe(409)
  })
})

describe('x402: the settlement in the mempool, copied by a watcher', () => {
  test("attack: a watcher sends the market's pending settlement through a contract (not a direct call to the token) with a higher tip: the buyer's money reaches the seller once, and the order is paid", async () => {
    const forwarder = '0x5ec0de00000000000000000000000000000000f0' as Hex
    await anvil.testClient.setCode({ address: forwarder, bytecode: forwarderCode(USDC_ADDRESS) })
    const app = await market(facilitator(settlerB, 10_000))
    const payload = await signedPayment(await offerOf(app), buyer)
    const before = await Promise.all([anvil.usdcOf(buyer.address), anvil.usdcOf(seller.address)])
    await anvil.testClient.setAutomine(false)
    let answer: Awaited<ReturnType<typeof payWith>>
    let copied: Hex = '0x'
    try {
      const answering = payWith(app, payload)
      const [settlement] = await pendingFrom(settlerB, 1)
      copied = await anvil.walletFor(thief).sendTransaction({
        to: forwarder,
        data: settlement?.input ?? authorizationCallOf(payload),
        gas: 300_000n,
        maxFeePerGas: (settlement?.maxFeePerGas ?? 10n ** 9n) * 4n,
        maxPriorityFeePerGas: (settlement?.maxPriorityFeePerGas ?? 10n ** 9n) * 4n + 1n,
      })
      await Bun.sleep(50)
      await anvil.testClient.mine({ blocks: 1 })
      answer = await answering
    } finally {
      await anvil.testClient.setAutomine(true)
    }
    expect(await Promise.all([anvil.usdcOf(buyer.address), anvil.usdcOf(seller.address)])).toEqual([
      (before[0] ?? 0n) - PRICE,
      (before[1] ?? 0n) + PRICE,
    ])
    // The watcher's copy was mined first and moved the money; the market's own settlement reverted.
    expect((await anvil.publicClient.getTransactionReceipt({ hash: copied })).status).toBe('success')
    app.clock.advance(60_000)
    await app.market.recheckPendingPayments()
    const { tasks } = await app.queue()
    expect(
      tasks.map((task) => task.status),
      `${answer.status} ${JSON.stringify(answer.json)}`,
    ).toEqual(['paid'])
  })

  test("attack: a watcher copies the market's pending settlement and sends the authorization to the same market for another skill, another body and another buyer name while it is unmined: 409, no task, no task id", async () => {
    const app = await market(facilitator(settlerB, 10_000))
    const translate = await app.register('other', { skills: [{ ...SKILL, name: 'Translate' }] })
    await app.call('PUT', '/api/agents/other', {
      key: translate.key,
      body: { walletAddress: seller.address },
    })
    const payload = await signedPayment(await offerOf(app), buyer)
    await anvil.testClient.setAutomine(false)
    let copies: Awaited<ReturnType<typeof payWith>>[] = []
    let paid: Awaited<ReturnType<typeof payWith>>
    try {
      const answering = payWith(app, payload, { body: { params: { q: 'victim' } } })
      await pendingFrom(settlerB, 1)
      const otherOffer = await offerOf(app, '/api/agents/other/tasks/translate')
      copies = [
        await payWith(app, payload, { body: { params: { q: 'thief' } } }),
        await payWith(app, payload, { body: { buyer: 'mallory' } }),
        await payWith(
          app,
          { ...payload, accepted: otherOffer },
          { path: '/api/agents/other/tasks/translate' },
        ),
      ]
      await anvil.testClient.mine({ blocks: 1 })
      paid = await answering
    } finally {
      await anvil.testClient.setAutomine(true)
    }
    expect(paid.status).toBe(201)
    for (const copy of copies) {
      expect(copy.status, copy.text).toBe(409)
      expect(copy.text).not.toContain('task_')
      expect(copy.headers.get('payment-response')).toBeNull()
    }
    expect((await app.queue()).total).toBe(1)
  })
})

// MPP push (hash) credentials, on the scripted Tempo node, in-process: `seller` sells Summary (0.01 USDC.e) and Digest
// (0.01) to tempoPayer(1); buyers push their own transfers with the real mppx client.
const SUMMARY = '/api/agents/seller/tasks/summary'
const DIGEST = '/api/agents/seller/tasks/digest'
const MPP_SKILLS = [
  { name: 'Summary', type: 'purchasable', price: '0.01' },
  { name: 'Digest', type: 'purchasable', price: '0.01' },
]

async function mppMarket(node: ScriptedTempo) {
  const app = await testApp('2026-06-01T12:00:00.000Z', {
    mpp: {
      secretKey: 'attack54-mpp-secret-key-of-32-bytes!',
      realm: 'localhost',
      currency: TEMPO_USDC_E,
      getClient: () => node.client('server'),
    },
  })
  const { key } = await app.register('seller', { skills: MPP_SKILLS })
  await app.call('PUT', '/api/agents/seller', { key, body: { walletAddress: tempoPayer(1).address } })
  const order = (body: unknown, authorization?: string, path = SUMMARY) =>
    app.app.handle(
      new Request(`http://localhost${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify(body),
      }),
    )
  const paid = async () => {
    const page = await app.store.listTasks('seller', {
      statuses: ['paid'],
      order: 'history',
      limit: 50,
      offset: 0,
    })
    return page.total
  }
  return { app, key, order, paid }
}

/** A push-mode mppx client of `payer` (it sends its own transfer to the node and hands over the hash). */
const pushClient = (node: ScriptedTempo, payer = 3) =>
  MppxClient.create({
    polyfill: false,
    methods: [
      tempoClient.charge({ account: tempoPayer(payer), getClient: () => node.client('buyer'), mode: 'push' }),
    ],
  })

/** The challenge of a 402 answer for `body`. */
async function challengeOf(shop: Awaited<ReturnType<typeof mppMarket>>, body: unknown, path = SUMMARY) {
  const answer = await shop.order(body, undefined, path)
  expect(answer.status).toBe(402)
  return Challenge.fromResponse(answer)
}

/** `payer` pushes a transfer for `signedFor` (a challenge, maybe doctored) and names it under `under`. */
async function pushedUnder(
  node: ScriptedTempo,
  signedFor: Challenge.Challenge,
  under: Challenge.Challenge = signedFor,
  payer = 3,
) {
  const made = await pushClient(node, payer).createCredential(
    new Response(null, { status: 402, headers: { 'www-authenticate': Challenge.serialize(signedFor) } }),
  )
  const credential = Credential.deserialize(made)
  const hash = (credential.payload as { hash: Hex }).hash
  return { hash, authorization: Credential.serialize({ ...credential, challenge: under }) }
}

/** Runs `work` with the wall clock past every challenge made before it (mppx's live five minutes). */
async function afterExpiry<T>(work: () => Promise<T>): Promise<T> {
  setSystemTime(new Date(Date.now() + 6 * 60_000))
  try {
    return await work()
  } finally {
    setSystemTime()
  }
}

describe('MPP hash credentials presented after their challenge expired (paidBeforeExpiry)', () => {
  const ORDER = { params: { q: 'late' }, buyer: 'late' }

  const tampers: Record<string, (request: Record<string, unknown>) => Record<string, unknown>> = {
    'pays another wallet': (request) => ({ ...request, recipient: tempoPayer(4).address }),
    'pays half the price': (request) => ({ ...request, amount: String(BigInt(String(request.amount)) / 2n) }),
    'pays twice the price': (request) => ({
      ...request,
      amount: String(BigInt(String(request.amount)) * 2n),
    }),
  }
  for (const [name, tamper] of Object.entries(tampers))
    test(`attack: a transfer mined in time that ${name}, under the genuine challenge its memo names, sent after the expiry: 402, no task`, async () => {
      const node = scriptedTempo()
      const shop = await mppMarket(node)
      const genuine = await challengeOf(shop, ORDER)
      const { authorization } = await pushedUnder(
        node,
        { ...genuine, request: tamper(genuine.request) },
        genuine,
      )
      const answer = await afterExpiry(() => shop.order(ORDER, authorization))
      expect(answer.status).toBe(402)
      expect(answer.headers.get('payment-receipt')).toBeNull()
      expect(await shop.paid()).toBe(0)
    })

  test("attack: after the expiry, a transfer whose memo names another challenge of the same order, one that reverted, and the payer's own hash under an observer's identical-body challenge: 402, no task", async () => {
    const node = scriptedTempo()
    const shop = await mppMarket(node)
    const first = await challengeOf(shop, ORDER)
    const second = await challengeOf(shop, ORDER)
    const crossed = await pushedUnder(node, first, second)
    node.revertNextBroadcast()
    const reverted = await pushedUnder(node, await challengeOf(shop, ORDER))
    const paid = await pushedUnder(node, await challengeOf(shop, ORDER))
    const observers = await challengeOf(shop, ORDER)
    const copied = Credential.serialize(
      Credential.from({ challenge: observers, payload: { type: 'hash', hash: paid.hash } }),
    )
    const answers = await afterExpiry(async () => [
      await shop.order(ORDER, crossed.authorization),
      await shop.order(ORDER, reverted.authorization),
      await shop.order(ORDER, copied),
    ])
    expect(answers.map((answer) => answer.status)).toEqual([402, 402, 402])
    expect(await shop.paid()).toBe(0)
  })

  test('attack: a transfer mined in time whose first answer was lost, presented after the expiry for another body, another skill or another buyer name: 402; for its own order once (201), then its task (200); never a second order', async () => {
    const node = scriptedTempo()
    const shop = await mppMarket(node)
    const challenge = await challengeOf(shop, ORDER)
    const { hash, authorization } = await pushedUnder(node, challenge)
    // The market's receipt read fails: 503 "not mined yet, send the same credential again".
    node.failNextReceipt()
    expect((await shop.order(ORDER, authorization)).status).toBe(503)
    const answers = await afterExpiry(async () => [
      await shop.order({ ...ORDER, params: { q: 'another order' } }, authorization),
      await shop.order(ORDER, authorization, DIGEST),
      await shop.order({ ...ORDER, buyer: 'mallory' }, authorization),
      await shop.order(ORDER, authorization),
      await shop.order(ORDER, authorization),
    ])
    const statuses = answers.map((answer) => answer.status)
    expect(statuses.slice(0, 3)).toEqual([402, 402, 402])
    expect(statuses.slice(3)).toEqual([201, 200])
    const ids = await Promise.all(
      answers.slice(3).map(async (answer) => ((await answer.json()) as { task_id: string }).task_id),
    )
    expect(new Set(ids).size).toBe(1)
    // Another buyer's fresh challenge naming the same (public) hash, after the expiry and before it: refused.
    const observer = Credential.serialize(
      Credential.from({ challenge: await challengeOf(shop, ORDER), payload: { type: 'hash', hash } }),
    )
    expect((await shop.order(ORDER, observer)).status).toBe(402)
    expect(await shop.paid()).toBe(1)
  })
})

/**
 * A market on its own scripted Tempo node and two 402 challenges for the same body (`{}`) issued in one millisecond
 * (the clock frozen): the victim's, then an observer's.
 */
async function sameMillisecondChallenges() {
  const node = scriptedTempo()
  const shop = await mppMarket(node)
  setSystemTime(new Date(Date.now()))
  try {
    const victims = await challengeOf(shop, {})
    const observers = await challengeOf(shop, {})
    return { node, shop, victims, observers }
  } finally {
    setSystemTime()
  }
}

describe('MPP: a retry after a price change, and challenges issued in the same millisecond', () => {
  const ORDER = { params: { q: 'late' }, buyer: 'late' }

  // Was a defect (money taken without serving): a buyer pays a hash credential in time; the market's first answer is the 503
  // "not mined yet ... send the same credential again ... do not send a new payment"; meanwhile the seller changes the
  // skill's price. The same credential, sent again as told, still within the challenge's five minutes, is refused 402
  // (mppx's route binding: the challenge's amount no longer matches), and after the expiry paidBeforeExpiry refuses it
  // too ("asks what the order asks now"). The buyer's 0.01 was at the seller, no task. Now a transfer made in time for
  // the market's own challenge pays that order (201) as the challenge asked, whatever the price or wallet became.
  const changes: Record<string, Record<string, unknown>> = {
    price: { skills: [{ ...MPP_SKILLS[0], price: '0.02' }, MPP_SKILLS[1]] },
    wallet: { walletAddress: tempoPayer(4).address },
  }
  for (const [name, body] of Object.entries(changes))
    test(`attack: the seller changes its ${name} between a buyer's in-time hash payment (answered 503) and the buyer's retry with the same credential: the order is paid once, as its challenge asked`, async () => {
      const node = scriptedTempo()
      const shop = await mppMarket(node)
      const { authorization } = await pushedUnder(node, await challengeOf(shop, ORDER))
      node.failNextReceipt()
      expect((await shop.order(ORDER, authorization)).status).toBe(503)
      const changed = await shop.app.call('PUT', '/api/agents/seller', { key: shop.key, body })
      expect(changed.status).toBe(200)
      const retried = await shop.order(ORDER, authorization)
      expect(retried.status, await retried.clone().text()).toBe(201)
      expect((await shop.order(ORDER, authorization)).status).toBe(200)
      expect(await shop.paid()).toBe(1)
    })

  // Was a defect (a paid task shared with an observer; doubtful in practice): a challenge was a pure function of the order
  // (agent, skill, body digest, price) and of its expiry in milliseconds (HMAC, no random part), so two 402s for the same
  // body issued in the same millisecond are the same challenge. An observer who asks for challenges of a popular order
  // body (e.g. `{}`) in every millisecond holds the victim's challenge too (it finds which one by the memo's
  // fingerprint on chain) and presents the victim's mined hash under it: its order is paid by the victim's transfer, and
  // the victim's own credential then answers the observer's task (200): one payment, a task (id, result) the observer
  // reads. Simulated here by freezing the clock. Now each 402 is a distinct challenge (a random nonce in its opaque).
  test("attack: an observer's challenge issued in the same millisecond as the victim's takes the victim's pushed transfer", async () => {
    const { node, shop, victims, observers } = await sameMillisecondChallenges()
    const { hash, authorization } = await pushedUnder(node, victims)
    const sniped = await shop.order(
      {},
      Credential.serialize(Credential.from({ challenge: observers, payload: { type: 'hash', hash } })),
    )
    const victim = await shop.order({}, authorization)
    const [observerTask, victimTask] = (await Promise.all([sniped.json(), victim.json()])) as {
      task_id?: string
    }[]
    const told = `observer ${sniped.status} ${observerTask?.task_id}, victim ${victim.status} ${victimTask?.task_id}`
    // Safe: the observer's credential pays nothing and learns no task; the victim's pays its own order.
    expect(sniped.status, told).toBe(402)
    expect(victim.status, told).toBe(201)
    expect(observers.id).not.toBe(victims.id)
  })

  // Was a defect of the same root (same-millisecond challenges were identical), pull mode: the victim pays through the market
  // as usual; the raw signed transfer the market broadcast is public, so an observer holding the identical challenge
  // rebuilds the victim's credential byte for byte and is answered the victim's paid task (its id grants reading it).
  test("attack (pull): an observer's challenge issued in the same millisecond as the victim's, with the victim's broadcast transaction, is answered the victim's task", async () => {
    const { node, shop, victims, observers } = await sameMillisecondChallenges()
    const puller = MppxClient.create({
      polyfill: false,
      methods: [
        tempoClient.charge({ account: tempoPayer(2), getClient: () => node.client('buyer'), mode: 'pull' }),
      ],
    })
    const signed = await puller.createCredential(
      new Response(null, { status: 402, headers: { 'www-authenticate': Challenge.serialize(victims) } }),
    )
    const paid = await shop.order({}, signed)
    expect(paid.status).toBe(201)
    const victimTask = ((await paid.json()) as { task_id: string }).task_id
    const [raw] = node.calls
      .filter((call) => call.side === 'server' && call.method.startsWith('eth_sendRawTransaction'))
      .map((call) => (call.params as [Hex])[0])
    const { source } = Credential.deserialize(signed) as { source?: string }
    const rebuilt = Credential.serialize(
      Credential.from({
        challenge: observers,
        payload: { type: 'transaction', signature: raw as Hex },
        ...(source ? { source } : {}),
      }),
    )
    const answer = await shop.order({}, rebuilt)
    const text = await answer.text()
    expect(text).not.toContain(victimTask)
    expect(answer.status, text.slice(0, 200)).toBe(402)
  })
})
