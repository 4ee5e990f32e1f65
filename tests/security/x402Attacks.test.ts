import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type ChainReader, payerProofTypedData, type X402Facilitator } from '@agentmarket/core'
import { viemChain, viemX402Facilitator } from '@agentmarket/core/viem'
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  encodePaymentSignatureHeader,
} from '@x402/core/http'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import {
  type Address,
  concat,
  decodeFunctionData,
  encodeFunctionData,
  type Hex,
  parseAbi,
  parseSignature,
  serializeErc6492Signature,
  toHex,
} from 'viem'
import type { HDAccount } from 'viem/accounts'
import { TEST_BASE_URL, testApp } from '../../packages/server/src/testing/http.ts'
import { type Anvil, paymentChain, USDC_ADDRESS } from '../support/anvil.ts'
import { type AuthorizationChange, payloadOf, signedPayment } from '../support/x402.ts'

// Attacks on the x402 money path (commit 3e6b99a): an observer of the chain and of every public answer (the
// settlement's call data holds the whole EIP-3009 authorization), a buyer who bends the payload, a payer racing its
// own authorizations. Each drives the in-process app over a real anvil with the mock USDC, and asserts the safe
// outcome: a test that fails is an attack that works.

const PRICE = 500_000n
const SKILL = { name: 'Deep Search', type: 'purchasable', price: '0.5' }
const OTHER_SKILL = { name: 'Translate', type: 'purchasable', price: '0.5' }
const FREE_SKILL = { name: 'Ping', type: 'free' }
const PATH = '/api/agents/seller/tasks/deep-search'
const ROW8 = '/api/agents/seller/tasks'

/** USDC's EIP-3009 entry points, both forms, as the settlement's call data carries them. */
const EIP3009_ABI = parseAbi([
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
])

/** A wallet contract that accepts every signature (ERC-1271 magic value for any call): a contract payer. */
const ACCEPT_ALL_WALLET_CODE = '0x631626ba7e60e01b60005260206000f3' as Hex

let anvil: Anvil
let buyer: HDAccount
let seller: HDAccount
let other: HDAccount
let settler: HDAccount
let thief: HDAccount
let poor: HDAccount
let slowSettler: HDAccount
let drained: HDAccount

beforeAll(async () => {
  const roles = ['buyer', 'seller', 'other', 'settler', 'thief', 'poor', 'slowSettler', 'drained'] as const
  const chain = await paymentChain(roles, { funded: ['buyer', 'thief'] })
  ;({ anvil } = chain)
  ;({ buyer, seller, other, settler, thief, poor, slowSettler, drained } = chain.accounts)
})

afterAll(() => {
  anvil?.stop()
})

type Market = Awaited<ReturnType<typeof market>>

/** The marketplace's own facilitator on anvil. */
const facilitator = (account: HDAccount = settler, receiptTimeoutMs?: number) =>
  viemX402Facilitator({ rpcUrl: anvil.rpcUrl, chain: anvil.chain, account, receiptTimeoutMs })

/**
 * A market taking x402 on anvil: `seller` sells Deep Search (0.5 USDC) and Ping (free), `other` sells Translate
 * (0.5 USDC) to its own wallet.
 */
async function market(
  options: { minConfirmations?: number; x402?: X402Facilitator; chain?: ChainReader } = {},
) {
  const app = await testApp('2026-06-01T12:00:00.000Z', {
    chain: options.chain ?? viemChain({ rpcUrl: anvil.rpcUrl, timeoutMs: 5_000 }),
    chainConfig: { minConfirmations: options.minConfirmations ?? 1 },
    x402: { facilitator: options.x402 ?? facilitator() },
  })
  const { key } = await app.register('seller', { skills: [SKILL, FREE_SKILL] })
  await app.call('PUT', '/api/agents/seller', { key, body: { walletAddress: seller.address } })
  const { key: otherKey } = await app.register('other', { skills: [OTHER_SKILL] })
  await app.call('PUT', '/api/agents/other', { key: otherKey, body: { walletAddress: other.address } })
  /** An agent's work queue: every task, in full. */
  const queue = async (agent = 'seller') =>
    (
      await app.call('GET', `/api/agents/${agent}/tasks?status=all`, {
        key: agent === 'seller' ? key : otherKey,
      })
    ).json
  return { ...app, key, otherKey, queue }
}

/** The x402 offer a 402 answer carries for `path`. */
async function offerOf(app: Market, path = PATH, body: unknown = {}): Promise<PaymentRequirements> {
  const answer = await app.call('POST', path, { body })
  expect(answer.status).toBe(402)
  const [accepted] = decodePaymentRequiredHeader(answer.headers.get('payment-required') ?? '').accepts
  if (!accepted) throw new Error('no x402 offer')
  return accepted
}

const randomNonce = () => toHex(crypto.getRandomValues(new Uint8Array(32)))
const nowSeconds = () => BigInt(Math.floor(Date.now() / 1000))

/** Sends an order (row 12 by default) with an x402 payment header. */
const payWith = (
  app: Market,
  payload: PaymentPayload,
  options: { path?: string; body?: unknown; headers?: Record<string, string> } = {},
) =>
  app.call('POST', options.path ?? PATH, {
    body: options.body ?? {},
    headers: { 'payment-signature': encodePaymentSignatureHeader(payload), ...options.headers },
  })

/** The settlement transaction of a paid answer (its PAYMENT-RESPONSE). */
const settlementOf = (answer: { headers: Headers }) =>
  decodePaymentResponseHeader(answer.headers.get('payment-response') ?? '').transaction as Hex

/**
 * What an observer of the chain rebuilds from a settlement: its authorization and signature, read from the call
 * data of the transaction, wrapped in a payload for the public offer.
 */
async function rebuiltFromChain(txHash: Hex, accepted: PaymentRequirements): Promise<PaymentPayload> {
  const transaction = await anvil.publicClient.getTransaction({ hash: txHash })
  const call = decodeFunctionData({ abi: EIP3009_ABI, data: transaction.input })
  if (call.functionName !== 'transferWithAuthorization') throw new Error('not a settlement')
  const [from, to, value, validAfter, validBefore, nonce] = call.args
  const signature =
    call.args.length === 9
      ? concat([call.args[7], call.args[8], toHex(call.args[6], { size: 1 })])
      : (call.args[6] as Hex)
  return payloadOf(accepted, { from, to, value, validAfter, validBefore, nonce }, signature)
}

/** `payer`'s PaymentClaim signature binding `txHash` to `task` ('' for an order paid before it exists). */
const claimSignature = (payer: HDAccount, txHash: Hex, task = '', agent = 'seller') =>
  payer.signTypedData(
    payerProofTypedData(8453, { market: TEST_BASE_URL, agent, task, txHash }) as Parameters<
      HDAccount['signTypedData']
    >[0],
  )

/** Runs `work` with anvil mining only when told (a slow chain), then mines and restores automine. */
async function withSlowChain<T>(work: () => Promise<T>): Promise<T> {
  await anvil.testClient.setAutomine(false)
  try {
    return await work()
  } finally {
    await anvil.testClient.mine({ blocks: 1 })
    await anvil.testClient.setAutomine(true)
  }
}

/** The settlement `account` has broadcast and the chain has not mined yet, read from the pending block. */
async function pendingSettlementOf(account: HDAccount) {
  const deadline = performance.now() + 10_000
  while (performance.now() < deadline) {
    const block = await anvil.publicClient.getBlock({ blockTag: 'pending', includeTransactions: true })
    const found = block.transactions.find(
      (transaction) => transaction.from.toLowerCase() === account.address.toLowerCase(),
    )
    if (found) return found
    await Bun.sleep(5)
  }
  throw new Error('no settlement reached the mempool')
}

/**
 * A JSON-RPC proxy in front of anvil for the settler's client: it forwards every call, but answers HTTP 502 instead
 * of anvil's answer to the calls `fails` picks (the call still reached the node): an RPC provider's hiccup.
 */
function flakyRpc(fails: (method: string) => boolean) {
  const server = Bun.serve({
    port: 0,
    async fetch(request) {
      const text = await request.text()
      const upstream = await fetch(anvil.rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: text,
      })
      const answer = await upstream.text()
      const body = JSON.parse(text) as { method?: string } | { method?: string }[]
      const methods = Array.isArray(body) ? body.map((call) => call.method ?? '') : [body.method ?? '']
      if (methods.some(fails)) return new Response('bad gateway', { status: 502 })
      return new Response(answer, { headers: { 'content-type': 'application/json' } })
    },
  })
  return { url: `http://localhost:${server.port}`, stop: () => server.stop(true) }
}

/**
 * The market's chain reader on anvil, each read it makes logged in order: `head`, or `receipt:mined` / `receipt:none`
 * for each receipt asked for.
 */
function loggedChain() {
  const reads: string[] = []
  const inner = viemChain({ rpcUrl: anvil.rpcUrl, timeoutMs: 5_000 })
  const chain: ChainReader = {
    ...inner,
    async headBlock() {
      reads.push('head')
      return inner.headBlock()
    },
    async receipts(hashes, options) {
      const found = await inner.receipts(hashes, options)
      reads.push(...found.map((receipt) => (receipt ? 'receipt:mined' : 'receipt:none')))
      return found
    },
  }
  return { chain, reads }
}

/** The reads `reads` logged after the first receipt found mined. */
const afterMined = (reads: string[]) => reads.slice(reads.indexOf('receipt:mined') + 1)

describe('x402 v2: attacks on the money path', () => {
  test('attack: a chain observer rebuilds the settled authorization from the call data and sends it again (row 12, row 8, re-cased, another seller): 409 or 402, no task id, no money, no task', async () => {
    const app = await market()
    const accepted = await offerOf(app)
    const paid = await payWith(app, await signedPayment(accepted, buyer), {
      body: { params: { q: 'secret' } },
    })
    expect(paid.status).toBe(201)
    const taskId = paid.json.task_id as string
    const sellerAfter = await anvil.usdcOf(seller.address)
    // Everything below is public: the settlement's hash (the feed shows it) and the 402 offer anyone is handed.
    const rebuilt = await rebuiltFromChain(settlementOf(paid), await offerOf(app))
    const inner = rebuilt.payload as { authorization: Record<string, string>; signature: Hex }
    const recased = (authorization: Record<string, string>) => ({
      ...rebuilt,
      payload: { ...inner, authorization },
    })
    const attempts = [
      await payWith(app, rebuilt),
      await payWith(app, rebuilt, { path: ROW8, body: { skill: 'deep-search' } }),
      await payWith(app, rebuilt, { body: { params: { q: 'another order' } } }),
      await payWith(
        app,
        recased({
          ...inner.authorization,
          from: (inner.authorization.from ?? '').toLowerCase(),
          nonce: `0x${(inner.authorization.nonce ?? '').slice(2).toUpperCase()}`,
        }),
      ),
      await payWith(app, { ...rebuilt, accepted: { ...accepted, payTo: accepted.payTo.toLowerCase() } }),
    ]
    for (const attempt of attempts) {
      expect(attempt.status).toBe(409)
      expect(attempt.json.code).toBe('authorization_already_used')
    }
    // Naming the observer as the order's buyer wallet, or under another seller's offer (the authorization pays the
    // first seller): refused, or told it is spent.
    const refused = [
      await payWith(app, rebuilt, { body: { buyer_wallet: thief.address } }),
      await payWith(
        app,
        { ...rebuilt, accepted: await offerOf(app, '/api/agents/other/tasks/translate') },
        { path: '/api/agents/other/tasks/translate' },
      ),
    ]
    for (const attempt of refused) expect([402, 409]).toContain(attempt.status)
    for (const attempt of [...attempts, ...refused]) {
      expect(attempt.text).not.toContain(taskId)
      expect(attempt.text).not.toContain('task_')
      expect(attempt.headers.get('payment-response')).toBeNull()
    }
    expect(await anvil.usdcOf(seller.address)).toBe(sellerAfter)
    expect((await app.queue()).total).toBe(1)
    expect((await app.queue('other')).total).toBe(0)
  })

  test("attack: the settlement's hash as an observer's payment (a pay-first order with the observer's own signature, verify-payment of its own task with or without one): nothing is paid", async () => {
    const app = await market()
    const paid = await payWith(app, await signedPayment(await offerOf(app), buyer))
    expect(paid.status).toBe(201)
    const hash = settlementOf(paid)
    const payFirst = await app.call('POST', ROW8, {
      body: { skill: 'deep-search', tx_hash: hash, payer_signature: await claimSignature(thief, hash) },
    })
    expect(payFirst.status).toBe(409)
    expect(payFirst.json.code).toBe('tx_already_used')
    const mine = await app.call('POST', ROW8, { body: { skill: 'deep-search' } })
    expect(mine.status).toBe(201)
    const verifyPath = `/api/agents/seller/tasks/${mine.json.task_id}/verify-payment`
    for (const signature of [await claimSignature(thief, hash, mine.json.task_id), undefined]) {
      const verified = await app.call('POST', verifyPath, {
        body: { tx_hash: hash, ...(signature ? { payer_signature: signature } : {}) },
      })
      expect([400, 409]).toContain(verified.status)
    }
    const queue = (await app.queue()).tasks as { task_id: string; status: string }[]
    expect(queue.filter((task) => task.status === 'paid').map((task) => task.task_id)).toEqual([
      paid.json.task_id,
    ])
  })

  test('attack: while the settlement awaits its confirmations, an observer orders with its hash and verifies its own task with it; the re-check pays only the x402 order', async () => {
    const app = await market({ minConfirmations: 3 })
    const sellerBefore = await anvil.usdcOf(seller.address)
    const pending = await payWith(app, await signedPayment(await offerOf(app), buyer))
    expect(pending.status).toBe(202)
    const victimTask = pending.json.task_id as string
    const hash = settlementOf(pending)
    // The observer's orders: one signed by its own wallet, one with the victim's task id signed by it.
    const ownSigned = await app.call('POST', ROW8, {
      body: { skill: 'deep-search', tx_hash: hash, payer_signature: await claimSignature(thief, hash) },
    })
    expect(ownSigned.status).toBe(202)
    const observerTask = ownSigned.json.task_id as string
    await anvil.mine(3)
    const verified = await app.call('POST', `/api/agents/seller/tasks/${observerTask}/verify-payment`, {
      body: { tx_hash: hash, payer_signature: await claimSignature(thief, hash, observerTask) },
    })
    expect(verified.status).toBe(422)
    expect(verified.json.code).toBe('payer_signature_invalid')
    app.clock.advance(60_000)
    const report = await app.market.recheckPendingPayments()
    expect(report.paid).toBe(1)
    const tasks = (await app.queue()).tasks as {
      task_id: string
      status: string
      payment: { method: string }
    }[]
    const byId = Object.fromEntries(tasks.map((task) => [task.task_id, task]))
    expect(byId[victimTask]?.status).toBe('paid')
    expect(byId[victimTask]?.payment.method).toBe('x402')
    expect(byId[observerTask]?.status).toBe('pending_payment')
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
  })

  test("attack: the x402 payer reuses its own settlement's hash, with a valid payer signature, for a second order while the first awaits confirmations: the payment still pays one task", async () => {
    const app = await market({ minConfirmations: 3 })
    const pending = await payWith(app, await signedPayment(await offerOf(app), buyer))
    expect(pending.status).toBe(202)
    const hash = settlementOf(pending)
    const second = await app.call('POST', ROW8, {
      body: { skill: 'deep-search', tx_hash: hash, payer_signature: await claimSignature(buyer, hash) },
    })
    expect(second.status).toBe(202)
    await anvil.mine(3)
    app.clock.advance(60_000)
    await app.market.recheckPendingPayments()
    app.clock.advance(600_000)
    await app.market.recheckPendingPayments()
    const tasks = (await app.queue()).tasks as { status: string; payment: { tx_hash: string | null } }[]
    expect(tasks.length).toBe(2)
    expect(tasks.filter((task) => task.status === 'paid').length).toBe(1)
  })

  test("attack: row 8 with PAYMENT-SIGNATURE and another seller's skill, or another seller's offer: nothing is settled, and the authorization still pays the order it was signed for", async () => {
    const app = await market()
    const othersOffer = await offerOf(app, '/api/agents/other/tasks/translate')
    const payload = await signedPayment(othersOffer, buyer)
    const before = await Promise.all([
      anvil.usdcOf(buyer.address),
      anvil.usdcOf(seller.address),
      anvil.usdcOf(other.address),
    ])
    const foreignSkill = await payWith(app, payload, { path: ROW8, body: { skill: 'translate' } })
    expect(foreignSkill.status).toBe(404)
    expect(foreignSkill.json.code).toBe('skill_not_found')
    const ownSkill = await payWith(app, payload, { path: ROW8, body: { skill: 'deep-search' } })
    expect(ownSkill.status).toBe(402)
    expect(ownSkill.json.code).toBe('x402_payment_invalid')
    const rowTwelve = await payWith(app, payload)
    expect(rowTwelve.status).toBe(402)
    // A seller's offer paid on the other seller's path: refused too.
    const sellersPayload = await signedPayment(await offerOf(app), buyer)
    const swapped = await payWith(app, sellersPayload, {
      path: '/api/agents/other/tasks',
      body: { skill: 'translate' },
    })
    expect(swapped.status).toBe(402)
    expect(
      await Promise.all([
        anvil.usdcOf(buyer.address),
        anvil.usdcOf(seller.address),
        anvil.usdcOf(other.address),
      ]),
    ).toEqual(before)
    expect((await app.queue()).total).toBe(0)
    expect((await app.queue('other')).total).toBe(0)
    // Nothing was burned: each authorization still pays the order it was signed for, once.
    const right = await payWith(app, payload, {
      path: '/api/agents/other/tasks',
      body: { skill: 'translate' },
    })
    expect(right.status).toBe(201)
    expect(right.json.agent).toBe('other')
    expect(await anvil.usdcOf(other.address)).toBe((before[2] ?? 0n) + PRICE)
    expect(await anvil.usdcOf(seller.address)).toBe(before[1])
  })

  test('attack: odd PAYMENT-SIGNATURE shapes (x402Version 1, v1 fields, a Permit2 payload beside the authorization, malformed fields, a huge header, two headers) pay nothing, store nothing and burn nothing', async () => {
    const app = await market()
    const accepted = await offerOf(app)
    const payload = await signedPayment(accepted, buyer)
    const inner = payload.payload as { authorization: Record<string, string>; signature: Hex }
    const before = await Promise.all([anvil.usdcOf(buyer.address), anvil.usdcOf(seller.address)])
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64')
    const headers: [string, string][] = [
      ['x402Version 1', encode({ ...payload, x402Version: 1 })],
      ['v1 fields', encode({ x402Version: 1, scheme: 'exact', network: 'base', payload: inner })],
      [
        'permit2 beside the authorization',
        encode({
          ...payload,
          payload: {
            ...inner,
            permit2Authorization: {
              from: buyer.address,
              permitted: { token: USDC_ADDRESS, amount: PRICE.toString() },
              spender: '0x4020615294c913F045dc10f0a5cdEbd86c280001',
              nonce: '1',
              deadline: String(nowSeconds() + 300n),
              witness: { to: seller.address, validAfter: '0' },
            },
          },
        }),
      ],
      ['empty permit2', encode({ ...payload, payload: { ...inner, permit2Authorization: {} } })],
      [
        'value not a number',
        encode({
          ...payload,
          payload: { ...inner, authorization: { ...inner.authorization, value: '5e5' } },
        }),
      ],
      [
        'no recipient',
        encode({
          ...payload,
          payload: { ...inner, authorization: { ...inner.authorization, to: undefined } },
        }),
      ],
      ['signature not hex', encode({ ...payload, payload: { ...inner, signature: 'zz' } })],
      [
        'accepted amount re-spelt',
        encode({ ...payload, accepted: { ...accepted, amount: `0${accepted.amount}` } }),
      ],
      [
        'accepted network of another chain',
        encode({ ...payload, accepted: { ...accepted, network: 'eip155:84532' } }),
      ],
      ['huge, undecodable', 'A'.repeat(4_000_000)],
      [
        'huge, another price',
        encode({
          ...payload,
          accepted: { ...accepted, amount: '1', extra: { ...accepted.extra, pad: 'x'.repeat(2_000_000) } },
        }),
      ],
      [
        'two headers joined',
        `${encodePaymentSignatureHeader(payload)}, ${encodePaymentSignatureHeader(payload)}`,
      ],
    ]
    for (const [name, header] of headers) {
      const answer = await app.call('POST', PATH, { body: {}, headers: { 'payment-signature': header } })
      expect(answer.status, name).toBeGreaterThanOrEqual(400)
      expect(answer.text, name).not.toContain('task_')
    }
    // Two PAYMENT-SIGNATURE headers arrive as one value, comma-joined: undecodable.
    const twoHeaders = new Headers({ 'content-type': 'application/json' })
    twoHeaders.append('payment-signature', encodePaymentSignatureHeader(payload))
    twoHeaders.append('payment-signature', encodePaymentSignatureHeader(await signedPayment(accepted, thief)))
    const answer = await app.app.handle(
      new Request(`http://localhost${PATH}`, { method: 'POST', headers: twoHeaders, body: '{}' }),
    )
    expect(answer.status).toBe(402)
    expect(await Promise.all([anvil.usdcOf(buyer.address), anvil.usdcOf(seller.address)])).toEqual(before)
    expect((await app.queue()).total).toBe(0)
    // The authorization all of those carried was never claimed: it still pays, once.
    expect((await payWith(app, payload)).status).toBe(201)
    expect((await payWith(app, payload)).status).toBe(409)
  })

  test('attack: an authorization whose offer echo is exact but which pays more, pays someone else, starts later, or is signed for another chain or token domain: 402, nothing moves, its nonce is not burned', async () => {
    const app = await market()
    const accepted = await offerOf(app)
    const nonce = randomNonce()
    const before = await Promise.all([
      anvil.usdcOf(buyer.address),
      anvil.usdcOf(seller.address),
      anvil.usdcOf(thief.address),
    ])
    const cases: [string, PaymentPayload][] = [
      ['more than the price', await signedPayment(accepted, buyer, { nonce, value: PRICE + 1n })],
      ['to the thief', await signedPayment(accepted, buyer, { nonce, to: thief.address })],
      [
        'valid after a minute',
        await signedPayment(accepted, buyer, { nonce, validAfter: nowSeconds() + 60n }),
      ],
      [
        'expiring within the settlement',
        await signedPayment(accepted, buyer, { nonce, validBefore: nowSeconds() + 3n }),
      ],
      ['signed for chain 1', await signedPayment(accepted, buyer, { nonce, chainId: 1 })],
      [
        'signed for the testnet token name',
        await signedPayment(accepted, buyer, { nonce, domainName: 'USDC' }),
      ],
    ]
    for (const [name, payload] of cases) {
      const answer = await payWith(app, payload)
      expect(answer.status, name).toBe(402)
      expect(answer.json.code, name).toBe('x402_payment_invalid')
    }
    expect(
      await Promise.all([
        anvil.usdcOf(buyer.address),
        anvil.usdcOf(seller.address),
        anvil.usdcOf(thief.address),
      ]),
    ).toEqual(before)
    expect((await app.queue()).total).toBe(0)
    expect((await payWith(app, await signedPayment(accepted, buyer, { nonce }))).status).toBe(201)
  })

  test('attack: one authorization sent five times at once to one process: one task, one transfer', async () => {
    const app = await market()
    const payload = await signedPayment(await offerOf(app), buyer)
    const sellerBefore = await anvil.usdcOf(seller.address)
    const answers = await Promise.all([1, 2, 3, 4, 5].map(() => payWith(app, payload)))
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 409, 409, 409, 409])
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
    expect((await app.queue()).total).toBe(1)
  })

  test('attack: two authorizations with one (payer, nonce), for two sellers, raced: one order is paid, the other gets nothing', async () => {
    const app = await market()
    const nonce = randomNonce()
    const toSeller = await signedPayment(await offerOf(app), buyer, { nonce })
    const toOther = await signedPayment(await offerOf(app, '/api/agents/other/tasks/translate'), buyer, {
      nonce,
    })
    const before = (await anvil.usdcOf(seller.address)) + (await anvil.usdcOf(other.address))
    const answers = await Promise.all([
      payWith(app, toSeller),
      payWith(app, toOther, { path: '/api/agents/other/tasks/translate' }),
    ])
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 409])
    expect((await anvil.usdcOf(seller.address)) + (await anvil.usdcOf(other.address))).toBe(before + PRICE)
    const paid = [...(await app.queue()).tasks, ...(await app.queue('other')).tasks].filter(
      (task: { status: string }) => task.status === 'paid',
    )
    expect(paid.length).toBe(1)
  })

  test('attack: four authorizations of a wallet holding one price, sent at once while the chain is slow: one order is paid and the settler sends one transaction', async () => {
    await anvil.mintUsdc(poor.address, PRICE)
    const app = await market({ x402: facilitator(slowSettler, 10_000) })
    const accepted = await offerOf(app)
    const payloads = await Promise.all([1, 2, 3, 4].map(() => signedPayment(accepted, poor)))
    // (anvil estimates gas against its pending block, so the settlements after the first fail their estimate and are
    // never sent; a node that estimates against the latest block would send them all, and all but one would revert.)
    const sentBefore = await anvil.publicClient.getTransactionCount({ address: slowSettler.address })
    const answers = await withSlowChain(async () => {
      const racing = Promise.all(payloads.map((payload) => payWith(app, payload)))
      await Bun.sleep(1_500)
      await anvil.testClient.mine({ blocks: 1 })
      return racing
    })
    // One pays; the others, the same order by the same payer, are told it is being paid (409 task_not_pending) or
    // get its task, whichever moment they reach it: none is settled.
    const paid = answers.filter((answer) => answer.status === 201)
    expect(paid.length).toBe(1)
    for (const answer of answers.filter((other) => other.status !== 201))
      if (answer.status === 409) expect(answer.json.code).toBe('task_not_pending')
      else expect(answer.json.task_id).toBe(paid[0]?.json.task_id)
    const sent = (await anvil.publicClient.getTransactionCount({ address: slowSettler.address })) - sentBefore
    expect(sent).toBe(1)
    expect((await app.queue()).total).toBe(1)
    expect(await anvil.usdcOf(poor.address)).toBe(0n)
  })

  /**
   * Our facilitator, with `meanwhile` run once, between its verification of a payment (valid) and the settlement of
   * that payment: what a payer (or anyone holding one of its authorizations) does in that moment.
   */
  const frontRun = (meanwhile: () => Promise<void>): X402Facilitator => {
    const inner = facilitator()
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

  /** The EIP-3009 call of `payload`'s authorization, as anyone holding it may send it. */
  const authorizationCall = (payload: PaymentPayload): Hex => {
    const { authorization, signature } = payload.payload as {
      authorization: Record<'from' | 'to' | 'value' | 'validAfter' | 'validBefore' | 'nonce', string>
      signature: Hex
    }
    const { r, s, v } = parseSignature(signature)
    const { from, to, value, validAfter, validBefore, nonce } = authorization
    return encodeFunctionData({
      abi: EIP3009_ABI,
      functionName: 'transferWithAuthorization',
      args: [
        ...[from, to].map((address) => address as Address),
        ...[value, validAfter, validBefore].map(BigInt),
        nonce as Hex,
        Number(v),
        r,
        s,
      ] as never,
    })
  }

  /** The authorization fields of `payload`, as strings. */
  const authorizationOf = (payload: PaymentPayload) =>
    (payload.payload as { authorization: Record<'to' | 'value' | 'validBefore' | 'nonce', string> })
      .authorization

  const drains: Record<string, (accepted: PaymentRequirements) => Promise<void>> = {
    'a transfer of its whole balance': async () => {
      await anvil.transferUsdc(drained, thief.address, PRICE)
    },
    'another authorization of its whole balance, sent by another account': async (accepted) => {
      const elsewhere = await signedPayment(accepted, drained, { to: thief.address })
      const receipt = await anvil.sendCall(
        thief,
        { to: USDC_ADDRESS, data: authorizationCall(elsewhere) },
        200_000n,
      )
      expect(receipt.status).toBe('success')
    },
  }
  for (const [name, drain] of Object.entries(drains)) {
    test(`fault: the payer's balance is spent between the verification and the settlement (${name}): 402 naming why, nothing recorded or sent, and the order still payable`, async () => {
      await anvil.mintUsdc(drained.address, PRICE)
      let accepted: PaymentRequirements | null = null
      const app = await market({ x402: frontRun(() => drain(accepted as PaymentRequirements)) })
      accepted = await offerOf(app)
      const sellerBefore = await anvil.usdcOf(seller.address)
      const sentBefore = await anvil.publicClient.getTransactionCount({ address: settler.address })
      const answer = await payWith(app, await signedPayment(accepted, drained))
      // A problem that says what to do (sign a new authorization), never a 500.
      expect(answer.status, JSON.stringify(answer.json)).toBe(402)
      expect(answer.headers.get('content-type')).toContain('application/problem+json')
      expect(answer.json.code).toBe('x402_payment_invalid')
      expect(answer.json.detail).toContain('insufficient_balance')
      expect(answer.json.detail).toContain('Sign a new authorization')
      const required = decodePaymentRequiredHeader(answer.headers.get('payment-required') ?? '')
      expect(required.error).toContain('insufficient_balance')
      expect(await anvil.publicClient.getTransactionCount({ address: settler.address })).toBe(sentBefore)
      expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore)
      expect((await app.queue()).total).toBe(0)
      // Funded again, a new authorization pays the same order.
      await anvil.mintUsdc(drained.address, PRICE)
      const paid = await payWith(app, await signedPayment(accepted, drained))
      expect(paid.status, JSON.stringify(paid.json)).toBe(201)
      expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
      expect((await app.queue()).total).toBe(1)
    })
  }

  test("attack: the buyer's own authorization sent to the token by someone else between the verification and the settlement (another server's settlement of it for its own order looks the same): 402 nonce already used, nothing recorded, the settler sends nothing, the money moved once", async () => {
    await anvil.mintUsdc(drained.address, PRICE)
    let payload: PaymentPayload | null = null
    const app = await market({
      x402: frontRun(async () => {
        const receipt = await anvil.sendCall(
          thief,
          { to: USDC_ADDRESS, data: authorizationCall(payload as PaymentPayload) },
          200_000n,
        )
        expect(receipt.status).toBe('success')
      }),
    })
    const accepted = await offerOf(app)
    payload = await signedPayment(accepted, drained)
    const sellerBefore = await anvil.usdcOf(seller.address)
    const sentBefore = await anvil.publicClient.getTransactionCount({ address: settler.address })
    const answer = await payWith(app, payload)
    expect(answer.status, JSON.stringify(answer.json)).toBe(402)
    expect(answer.json.code).toBe('x402_payment_invalid')
    expect(answer.json.detail).toContain('nonce_already_used')
    // Its receipt names no transaction: the other one paid nothing here.
    expect(settlementOf(answer)).toBe('' as Hex)
    expect(await anvil.publicClient.getTransactionCount({ address: settler.address })).toBe(sentBefore)
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
    expect((await app.queue()).total).toBe(0)
  })

  const sameNonceElsewhere: Record<string, (payload: PaymentPayload) => AuthorizationChange> = {
    'to another payee': () => ({ to: thief.address }),
    'of less to the seller': (payload) => ({ value: BigInt(authorizationOf(payload).value) - 1n }),
    'to the seller with another validity': (payload) => ({
      validBefore: BigInt(authorizationOf(payload).validBefore) - 1n,
    }),
  }
  for (const [name, change] of Object.entries(sameNonceElsewhere)) {
    test(`attack: the payer's other authorization under the same nonce (${name}) used between the verification and the settlement: 402 nonce already used, nothing recorded`, async () => {
      await anvil.mintUsdc(drained.address, PRICE * 2n)
      let accepted: PaymentRequirements | null = null
      let payload: PaymentPayload | null = null
      const app = await market({
        x402: frontRun(async () => {
          const ours = payload as PaymentPayload
          const other = await signedPayment(accepted as PaymentRequirements, drained, {
            nonce: authorizationOf(ours).nonce as Hex,
            ...change(ours),
          })
          const receipt = await anvil.sendCall(
            thief,
            { to: USDC_ADDRESS, data: authorizationCall(other) },
            200_000n,
          )
          expect(receipt.status).toBe('success')
        }),
      })
      accepted = await offerOf(app)
      payload = await signedPayment(accepted, drained)
      const answer = await payWith(app, payload)
      expect(answer.status, JSON.stringify(answer.json)).toBe(402)
      expect(answer.json.detail).toContain('nonce_already_used')
      expect((await app.queue()).total).toBe(0)
    })
  }

  test('attack: a contract-wallet payer (ERC-1271) pays once; its settled authorization rebuilt from the bytes-signature call data is refused; an ERC-6492-wrapped signature of an undeployed wallet settles nothing', async () => {
    const wallet = '0x5ec0de0000000000000000000000000000000001' as Address
    await anvil.testClient.setCode({ address: wallet, bytecode: ACCEPT_ALL_WALLET_CODE })
    await anvil.mintUsdc(wallet, PRICE)
    const app = await market()
    const accepted = await offerOf(app)
    const authorization = {
      from: wallet,
      to: accepted.payTo as Address,
      value: PRICE,
      validAfter: 0n,
      validBefore: nowSeconds() + 300n,
      nonce: randomNonce(),
    }
    const contractSignature = `0x${'ab'.repeat(70)}` as Hex
    const sellerBefore = await anvil.usdcOf(seller.address)
    const paid = await payWith(app, payloadOf(accepted, authorization, contractSignature))
    expect(paid.status).toBe(201)
    expect(paid.json.buyer_wallet.toLowerCase()).toBe(wallet)
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
    const rebuilt = await rebuiltFromChain(settlementOf(paid), accepted)
    expect((await payWith(app, rebuilt)).status).toBe(409)
    // An undeployed wallet with a factory the market does not trust: nothing sent, nothing stored.
    const undeployed = '0x5ec0de0000000000000000000000000000000002' as Address
    await anvil.mintUsdc(undeployed, PRICE)
    const wrapped = serializeErc6492Signature({
      address: '0x5ec0de00000000000000000000000000000000fa',
      data: '0x12345678',
      signature: contractSignature,
    })
    const counterfactual = await payWith(
      app,
      payloadOf(accepted, { ...authorization, from: undeployed }, wrapped),
    )
    expect(counterfactual.status).toBe(402)
    expect(await anvil.usdcOf(undeployed)).toBe(PRICE)
    expect((await app.queue()).total).toBe(1)
  })

  test('attack: both an MPP `Authorization: Payment` credential and PAYMENT-SIGNATURE: one order, paid once, by the x402 payment', async () => {
    const app = await market()
    const payload = await signedPayment(await offerOf(app), buyer)
    const sellerBefore = await anvil.usdcOf(seller.address)
    const junkCredential = `Payment ${Buffer.from('{"challenge":{},"payload":{}}').toString('base64url')}`
    const both = await payWith(app, payload, { headers: { authorization: junkCredential } })
    expect(both.status).toBe(201)
    expect(both.json.payment.method).toBe('x402')
    const again = await payWith(app, payload, { headers: { authorization: junkCredential } })
    expect(again.status).toBe(409)
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
    expect((await app.queue()).total).toBe(1)
  })

  test('attack: a PAYMENT-SIGNATURE sent with a free skill, or after the seller changed its wallet or price, settles nothing', async () => {
    const app = await market()
    const accepted = await offerOf(app)
    const payload = await signedPayment(accepted, buyer)
    const before = await Promise.all([anvil.usdcOf(buyer.address), anvil.usdcOf(seller.address)])
    const free = await payWith(app, payload, { path: '/api/agents/seller/tasks/ping' })
    expect(free.status).toBe(201)
    expect(free.json.payment.method).toBe('free')
    await app.call('PUT', '/api/agents/seller', { key: app.key, body: { walletAddress: other.address } })
    expect((await payWith(app, payload)).status).toBe(402)
    await app.call('PUT', '/api/agents/seller', { key: app.key, body: { walletAddress: seller.address } })
    await app.call('PUT', '/api/agents/seller', {
      key: app.key,
      body: { skills: [{ ...SKILL, price: '0.4' }, FREE_SKILL] },
    })
    expect((await payWith(app, payload)).status).toBe(402)
    expect(await Promise.all([anvil.usdcOf(buyer.address), anvil.usdcOf(seller.address)])).toEqual(before)
  })

  test('attack: a seller pays its own order from its own wallet (the settler pays the gas): the task is paid, but its delivery earns no paid trust', async () => {
    await anvil.mintUsdc(seller.address, PRICE)
    const app = await market()
    const paid = await payWith(app, await signedPayment(await offerOf(app), seller))
    expect(paid.status).toBe(201)
    const trustBefore = (await app.call('GET', '/api/community/agents/seller')).json.trustScore
    const completed = await app.call('POST', `/api/agents/seller/tasks/${paid.json.task_id}/complete`, {
      key: app.key,
      body: { result_url: 'https://example.com/result' },
    })
    expect(completed.status).toBe(200)
    expect((await app.call('GET', '/api/community/agents/seller')).json.trustScore).toBe(trustBefore)
  })

  test('attack: a settlement slower than the receipt wait is answered with its task (202), never a 402 asking to pay again', async () => {
    const app = await market({ x402: facilitator(slowSettler, 1_000) })
    const accepted = await offerOf(app)
    const buyerBefore = await anvil.usdcOf(buyer.address)
    const payload = await signedPayment(accepted, buyer)
    const first = await withSlowChain(() => payWith(app, payload))
    // The buyer retries as a client does after a slow answer: a new authorization, the same request. The order's
    // payment is unresolved, so the retry gets its task and the new authorization is not settled (issue 39).
    const second = await payWith(app, await signedPayment(accepted, buyer))
    expect(second.status).toBe(202)
    expect(second.json.task_id).toBe(first.json.task_id)
    app.clock.advance(60_000)
    await app.market.recheckPendingPayments()
    const tasks = (await app.queue()).tasks as { task_id: string; status: string }[]
    expect(tasks.map((task) => task.status)).toEqual(['paid'])
    expect(await anvil.usdcOf(buyer.address)).toBe(buyerBefore - PRICE)
    const firstTask = tasks[0]
    // Safe: the first answer names the task the settlement pays (202 while the chain has not shown it), never a 402
    // asking for another authorization while this one's transfer is on its way.
    expect(first.status, `first answer: ${first.status} ${first.json?.detail}`).toBe(202)
    expect(first.json.task_id).toBe(firstTask?.task_id)
  })

  for (const failing of ['eth_sendRawTransaction', 'eth_getTransactionReceipt'])
    test(`attack: an RPC hiccup after the settlement reached the node (${failing} answers 502) is answered with the task, never a 402 asking to pay again`, async () => {
      const rpc = flakyRpc((method) => method === failing)
      try {
        const flaky = viemX402Facilitator({ rpcUrl: rpc.url, chain: anvil.chain, account: slowSettler })
        const app = await market({ x402: flaky })
        const buyerBefore = await anvil.usdcOf(buyer.address)
        const answer = await payWith(app, await signedPayment(await offerOf(app), buyer))
        expect(await anvil.usdcOf(buyer.address)).toBe(buyerBefore - PRICE)
        app.clock.advance(60_000)
        await app.market.recheckPendingPayments()
        const [task] = (await app.queue()).tasks as { task_id: string; status: string }[]
        expect(task?.status).toBe('paid')
        // Safe: the answer names the stored task (201 when the chain already shows the transfer, else 202 and the
        // re-check), not a 402 asking to pay again.
        expect([201, 202], `${answer.status} ${answer.json?.detail}`).toContain(answer.status)
        expect(answer.json.task_id).toBe(task?.task_id)
      } finally {
        rpc.stop()
      }
    })

  test("attack: a watcher of the mempool front-runs the settlement with the same authorization (the seller has every reason to): the buyer's money reaches the seller, and the order is still paid", async () => {
    const app = await market({ x402: facilitator(slowSettler, 10_000) })
    const accepted = await offerOf(app)
    const before = await Promise.all([anvil.usdcOf(buyer.address), anvil.usdcOf(seller.address)])
    const payload = await signedPayment(accepted, buyer)
    const { nonce } = (payload.payload as { authorization: { nonce: Hex } }).authorization
    const answer = await withSlowChain(async () => {
      const answering = payWith(app, payload, { body: { params: { q: 'victim' } } })
      const settlement = await pendingSettlementOf(slowSettler)
      // The same call, from the watcher's own account, with a higher tip: mined first.
      await anvil.walletFor(thief).sendTransaction({
        to: USDC_ADDRESS,
        data: settlement.input,
        gas: 200_000n,
        maxFeePerGas: (settlement.maxFeePerGas ?? 10n ** 9n) * 4n,
        maxPriorityFeePerGas: (settlement.maxPriorityFeePerGas ?? 10n ** 9n) * 4n + 1n,
      })
      await Bun.sleep(50)
      await anvil.testClient.mine({ blocks: 1 })
      return answering
    })
    expect(await Promise.all([anvil.usdcOf(buyer.address), anvil.usdcOf(seller.address)])).toEqual([
      (before[0] ?? 0n) - PRICE,
      (before[1] ?? 0n) + PRICE,
    ])
    // The authorization was used on chain exactly as signed: this payer, this seller, this amount.
    const used = await anvil.publicClient.readContract({
      address: USDC_ADDRESS,
      abi: EIP3009_ABI,
      functionName: 'authorizationState',
      args: [buyer.address, nonce],
    })
    expect(used).toBe(true)
    app.clock.advance(60_000)
    await app.market.recheckPendingPayments()
    const tasks = (await app.queue()).tasks as { task_id: string; status: string }[]
    expect(tasks.length).toBe(1)
    // Safe: the authorization was used exactly as signed (this payer, this seller, this amount) for this order.
    expect(
      tasks[0]?.status,
      `answer ${answer.status} ${answer.json?.detail}; the task stays unpaid after the re-check`,
    ).toBe('paid')
  })

  test("attack: the facilitator settles unchecked only the payload it verified, as it verified it: one edited after its verification (to pay the thief), one settled against the thief's offer, a forgery never verified: nothing is recorded, nothing sent", async () => {
    const app = await market()
    const accepted = await offerOf(app)
    const settling = facilitator()
    const sentBefore = await anvil.publicClient.getTransactionCount({ address: settler.address })
    const balancesBefore = await Promise.all([anvil.usdcOf(buyer.address), anvil.usdcOf(thief.address)])
    const recorded: Hex[] = []
    const record = async (hash: Hex) => {
      recorded.push(hash)
    }
    const edited = await signedPayment(accepted, buyer)
    expect((await settling.verify(edited, accepted)).isValid).toBe(true)
    ;(edited.payload as { authorization: { to: Address } }).authorization.to = thief.address
    const rerouted = await signedPayment(accepted, buyer)
    expect((await settling.verify(rerouted, accepted)).isValid).toBe(true)
    const signedByThief = await signedPayment(accepted, thief)
    const stolen = signedByThief.payload as { authorization: Record<string, string>; signature: Hex }
    const forged = {
      ...signedByThief,
      payload: { ...stolen, authorization: { ...stolen.authorization, from: buyer.address } },
    }
    const settled = [
      await settling.settle(edited, accepted, record),
      await settling.settle(rerouted, { ...accepted, payTo: thief.address }, record),
      await settling.settle(forged, accepted, record),
    ]
    expect(settled.map((answer) => answer.success)).toEqual([false, false, false])
    expect(recorded).toEqual([])
    expect(await anvil.publicClient.getTransactionCount({ address: settler.address })).toBe(sentBefore)
    expect(await Promise.all([anvil.usdcOf(buyer.address), anvil.usdcOf(thief.address)])).toEqual(
      balancesBefore,
    )
  })
  test("the settlement's receipt is read once, by the market's own chain reader: at one confirmation the paid order reads nothing after it; at three the judgment reads it again at its depth", async () => {
    const shallow = loggedChain()
    const app = await market({ chain: shallow.chain })
    const paid = await payWith(app, await signedPayment(await offerOf(app), buyer))
    expect(paid.status).toBe(201)
    expect(shallow.reads).toContain('receipt:mined')
    expect(afterMined(shallow.reads)).toEqual([])
    expect(shallow.reads).not.toContain('head')

    const deep = loggedChain()
    const deepApp = await market({ chain: deep.chain, minConfirmations: 3 })
    const pending = await payWith(deepApp, await signedPayment(await offerOf(deepApp), buyer))
    expect(pending.status).toBe(202)
    expect(afterMined(deep.reads).sort()).toEqual(['head', 'receipt:mined'])
  })

  test("attack: a facilitator that records one hash and reads another transaction's receipt (a real payment to the seller, mined) through the market's reader, then says it paid: the order is not paid by that receipt", async () => {
    const logged = loggedChain()
    const app = await market({ chain: logged.chain })
    const accepted = await offerOf(app)
    const earlier = await payWith(app, await signedPayment(accepted, buyer), {
      body: { params: { q: 'first' } },
    })
    expect(earlier.status).toBe(201)
    const paidHash = settlementOf(earlier)
    const honest = facilitator()
    const neverSent = randomNonce()
    const lying: X402Facilitator = {
      verify: (payload, requirements) => honest.verify(payload, requirements),
      async settle(_payload, requirements, beforeBroadcast, chain) {
        await beforeBroadcast(neverSent)
        await chain?.receipts([paidHash])
        return { success: true, transaction: neverSent, network: requirements.network }
      },
    }
    const liar = await market({ chain: logged.chain, x402: lying })
    const answer = await payWith(liar, await signedPayment(await offerOf(liar), buyer))
    // Safe: the market judged the hash it recorded by reading the chain (nothing mined), never the other receipt.
    expect(answer.status).toBe(202)
    expect(answer.json.verification.tx_hash).toBe(neverSent)
    const tasks = (await liar.queue()).tasks as { status: string }[]
    expect(tasks.map((task) => task.status)).toEqual(['pending_payment'])
  })
})
