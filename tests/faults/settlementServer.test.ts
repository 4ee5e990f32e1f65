import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Message, taskStateToJSON } from '@a2a-js/sdk'
import type { X402Facilitator } from '@agentmarket/core'
import { viemChain, viemX402Facilitator } from '@agentmarket/core/viem'
import type { PaymentRequired } from '@x402/core/types'
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch'
import { Credential } from 'mppx'
import { Mppx as MppxClient, tempo as tempoClient } from 'mppx/client'
import { type Hex, keccak256, toHex } from 'viem'
import type { HDAccount } from 'viem/accounts'
import { testApp } from '../../packages/server/src/testing/http.ts'
import { sdkClientVia, sdkMessage, sendForTask } from '../support/a2aClient.ts'
import { type Anvil, paymentChain } from '../support/anvil.ts'
import { startMarketServer } from '../support/process.ts'
import { type ScriptedTempo, scriptedTempo, TEMPO_USDC_E, tempoPayer } from '../support/tempo.ts'
import { x402Payer } from '../support/x402.ts'
import { type FaultyRpc, faultyRpc } from './faultyRpc.ts'

// The fault battery of the rails where the market moves the money (x402 settlement, MPP broadcast): each case
// drives the buyer's real client through a fault and ends when the chain and the market have settled; the buyer
// must then be charged at most once per order it meant, and served for every charge.

// Each case waits on conditions (a frozen call reached, a check done), never on a clock; this bound only ends a hang.
setDefaultTimeout(300_000)

const PRICE = 500_000n
const SKILL = { name: 'Deep Search', type: 'purchasable', price: '0.5' }
const PATH = '/api/agents/seller/tasks/deep-search'
const ORDER = { params: { q: 'faults' } }

/** What one case ended with: orders the buyer meant, charges taken, and paid tasks it got. */
type Tally = { name: string; charged: number; served: number; meant: number }
const tallies: Tally[] = []

/** Records a case's end and checks it: charged at most once per meant order, and served for each charge. */
function tally(name: string, end: { charged: number; served: number; meant?: number }) {
  const row = { name, meant: 1, ...end }
  tallies.push(row)
  expect(row.charged, `${name}: charged`).toBeLessThanOrEqual(row.meant)
  expect(row.served, `${name}: served`).toBe(row.charged)
}

afterAll(() => {
  const doubled = tallies.filter((row) => row.charged > row.meant).length
  const unserved = tallies.filter((row) => row.charged > row.served).length
  console.log(
    `settlement faults (server-broadcast rails): ${tallies.length} cases, double-charged ${doubled}, charged-unserved ${unserved}`,
  )
})

let anvil: Anvil
let buyer: HDAccount
let seller: HDAccount
let settler: HDAccount
let rpc: FaultyRpc
const folders: string[] = []

beforeAll(async () => {
  const chain = await paymentChain(['buyer', 'seller', 'settler'], { funded: ['buyer'] })
  ;({ anvil } = chain)
  ;({ buyer, seller, settler } = chain.accounts)
  rpc = faultyRpc(anvil.rpcUrl)
})

afterAll(() => {
  rpc?.stop()
  anvil?.stop()
  for (const folder of folders) rmSync(folder, { recursive: true, force: true })
})

type MarketOptions = {
  databaseUrl?: string
  register?: boolean
  facilitator?: X402Facilitator
  receiptTimeoutMs?: number
  minConfirmations?: number
  /** The chain time one request may spend in all (CHAIN_REQUEST_BUDGET_MS); the default otherwise. */
  requestBudgetMs?: number
}

/** A market taking x402 through the faulty RPC (its checks and its settlements both), selling a 0.5 USDC skill. */
async function x402Market(options: MarketOptions = {}) {
  const facilitator =
    options.facilitator ??
    viemX402Facilitator({
      rpcUrl: rpc.url,
      chain: anvil.chain,
      account: settler,
      receiptTimeoutMs: options.receiptTimeoutMs,
    })
  const app = await testApp('2026-06-01T12:00:00.000Z', {
    chain: viemChain({ rpcUrl: rpc.url, timeoutMs: 5_000 }),
    chainConfig: {
      minConfirmations: options.minConfirmations ?? 1,
      ...(options.requestBudgetMs !== undefined && { requestBudgetMs: options.requestBudgetMs }),
    },
    databaseUrl: options.databaseUrl,
    x402: { facilitator },
  })
  let key = ''
  if (options.register !== false) {
    ;({ key } = await app.register('seller', { skills: [SKILL] }))
    await app.call('PUT', '/api/agents/seller', { key, body: { walletAddress: seller.address } })
  }
  const fetchApp = ((input: RequestInfo | URL, init?: RequestInit) =>
    app.app.handle(new Request(input, init))) as typeof fetch
  /** The seller's queue: every task. */
  const tasks = async (): Promise<{ task_id: string; status: string }[]> =>
    (await app.call('GET', '/api/agents/seller/tasks?status=all', { key })).json.tasks
  /** Runs the background re-checks until no payment check is left (each pass past the longest back-off). */
  const resolve = async () => {
    for (let pass = 0; pass < 8; pass++) {
      app.clock.advance(400_000)
      await app.market.recheckPendingPayments()
    }
  }
  return { ...app, fetchApp, tasks, resolve }
}
type X402Market = Awaited<ReturnType<typeof x402Market>>

/** The buyer's real x402 client over `market`: answers 402 by signing a fresh authorization, then sends it. */
function x402Buyer(market: X402Market) {
  const sent: string[] = []
  const recording = ((input: RequestInfo | URL, init?: RequestInit) => {
    const signature = new Headers(
      init?.headers ?? (input instanceof Request ? input.headers : undefined),
    ).get('payment-signature')
    if (signature) sent.push(signature)
    return market.fetchApp(input, init)
  }) as typeof fetch
  const paying = wrapFetchWithPayment(recording, x402Payer(buyer))
  /** One order attempt, with an Idempotency-Key when given. */
  const order = async (idempotencyKey?: string) => {
    const answer = await paying(`http://localhost${PATH}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
      },
      body: JSON.stringify(ORDER),
    })
    const text = await answer.text()
    return { status: answer.status, headers: answer.headers, json: text ? JSON.parse(text) : null }
  }
  /** The last PAYMENT-SIGNATURE sent again as it was (a client resending its request after an error). */
  const resend = (idempotencyKey?: string) =>
    market.call('POST', PATH, {
      body: ORDER,
      headers: {
        'payment-signature': sent.at(-1) ?? '',
        ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
      },
    })
  return { order, resend, sent }
}

/** The buyer's USDC balance now, to count charges from. */
const balance = () => anvil.usdcOf(buyer.address)

/** Charges taken since `before` (whole prices) and the paid tasks the market holds. */
async function x402End(market: X402Market, before: bigint) {
  const charged = Number((before - (await balance())) / PRICE)
  const served = (await market.tasks()).filter((task) => task.status === 'paid').length
  return { charged, served }
}

describe('x402 settlement under faults (the market broadcasts)', () => {
  test('fault: the RPC is down during verification, before anything is sent: 503 chain_unavailable, nothing changed; a retry pays once', async () => {
    const market = await x402Market()
    const client = x402Buyer(market)
    const before = await balance()
    rpc.down(true)
    const failed = await client.order()
    rpc.down(false)
    expect(failed.status).toBe(503)
    expect(failed.json.code).toBe('chain_unavailable')
    expect(failed.headers.get('retry-after')).toBeTruthy()
    expect(await market.tasks()).toEqual([])
    const paid = await client.order()
    expect(paid.status).toBe(201)
    await market.resolve()
    tally('x402: RPC down before broadcast, fresh authorization retry', await x402End(market, before))
  })

  test('fault: the RPC drops the nonce read after verification (before broadcast): 503, the same signed authorization then pays once', async () => {
    const market = await x402Market()
    const client = x402Buyer(market)
    const before = await balance()
    // The nonce comes with the gas and fees from eth_fillTransaction; when that fails, viem reads it alone.
    rpc.arm('eth_fillTransaction', 'drop')
    rpc.arm('eth_getTransactionCount', 'drop')
    const failed = await client.order()
    expect(failed.status).toBe(503)
    expect(failed.json.code).toBe('chain_unavailable')
    expect(await market.tasks()).toEqual([])
    const again = await client.resend()
    expect(again.status).toBe(201)
    expect(again.json.status).toBe('paid')
    await market.resolve()
    tally('x402: RPC drops before broadcast, same authorization resent', await x402End(market, before))
  })

  test('fault: the node takes the broadcast and the answer is lost: the task is paid from the chain; a retry with the key and a fresh authorization gets it, no second charge', async () => {
    const market = await x402Market()
    const client = x402Buyer(market)
    const before = await balance()
    rpc.arm('eth_sendRawTransaction', 'forward-then-drop')
    const first = await client.order('order-lost-answer')
    expect([201, 202]).toContain(first.status)
    // The facilitator heard no answer, the chain then showed the payment: the receipt says paid and names no error.
    const receipt = decodePaymentResponseHeader(first.headers.get('payment-response') ?? '')
    expect(receipt.success).toBe(true)
    expect(receipt.errorReason).toBeUndefined()
    const retry = await client.order('order-lost-answer')
    expect(retry.json.task_id).toBe(first.json.task_id)
    await market.resolve()
    tally('x402: broadcast answer lost, retry with key', await x402End(market, before))
  })

  test('fault: the RPC goes down right after the broadcast: 202 pending with the hash, never a new payment asked; retries without a key get the same task', async () => {
    // The receipt's wait ends at once: the RPC stays down past any wait.
    const market = await x402Market({ receiptTimeoutMs: 1 })
    const client = x402Buyer(market)
    const before = await balance()
    const frozen = rpc.freeze('eth_sendRawTransaction')
    const answer = client.order()
    await frozen.reached
    // Recorded before it is sent: the task and its transaction exist already.
    expect((await market.tasks()).map((task) => task.status)).toEqual(['pending_payment'])
    rpc.down(true)
    frozen.release(null)
    const pending = await answer
    expect(pending.status).toBe(202)
    expect(pending.headers.get('retry-after')).toBeTruthy()
    const txHash = pending.json.verification.tx_hash
    expect(txHash).toMatch(/^0x[0-9a-f]{64}$/)
    expect(pending.json.next_steps.pay).toContain(txHash)
    expect(pending.json.next_steps.pay).toContain('do not pay again')
    // Read back while unknown: the task says a payment is under way, and asks for none.
    const read = await market.call('GET', `/api/agents/seller/tasks/${pending.json.task_id}`)
    expect(read.json.next_steps.pay).toContain(txHash)
    // A client that gave up retries as it would after a timeout, with a fresh authorization and no key.
    const whileDown = await client.order()
    expect(whileDown.status).toBe(503)
    rpc.down(false)
    const retried = await client.order()
    expect(retried.status).toBe(202)
    expect(retried.json.task_id).toBe(pending.json.task_id)
    await market.resolve()
    expect((await market.tasks()).map((task) => task.status)).toEqual(['paid'])
    tally('x402: RPC down after broadcast, retries without key', await x402End(market, before))
  })

  test('fault: the RPC freezes at the broadcast and drops it unsent: pending with its hash; a retry with the key never pays a second time', async () => {
    const market = await x402Market()
    const client = x402Buyer(market)
    const before = await balance()
    const frozen = rpc.freeze('eth_sendRawTransaction')
    const answer = client.order('order-frozen')
    await frozen.reached
    frozen.release('drop')
    const pending = await answer
    expect(pending.status).toBe(202)
    const retry = await client.order('order-frozen')
    expect(retry.status).toBe(202)
    expect(retry.json.task_id).toBe(pending.json.task_id)
    await market.resolve()
    // Never sent: nothing charged, nothing served, and no second payment was taken meanwhile.
    tally('x402: broadcast frozen then dropped unsent, retry with key', await x402End(market, before))
  })

  test("fault: the broadcast freezes past the request's chain budget: it is still sent, the order answers 202 pending with its hash (never 'nothing changed'), a retry with the key gets that task, one charge", async () => {
    // The steps before the broadcast take well under a second; the budget is spent only while the broadcast is held.
    const market = await x402Market({ requestBudgetMs: 5_000 })
    const client = x402Buyer(market)
    const before = await balance()
    const frozen = rpc.freeze('eth_sendRawTransaction')
    const pending = await client.order('order-budget')
    // The answer came while the broadcast was still held: only the request's budget ended it.
    await frozen.reached
    expect(pending.status).toBe(202)
    expect(pending.headers.get('retry-after')).toBeTruthy()
    expect(pending.json.verification.tx_hash).toMatch(/^0x[0-9a-f]{64}$/)
    frozen.release(null)
    const retry = await client.order('order-budget')
    expect(retry.status).toBe(202)
    expect(retry.json.task_id).toBe(pending.json.task_id)
    await market.resolve()
    expect((await market.tasks()).map((task) => task.status)).toEqual(['paid'])
    tally('x402: broadcast frozen past the request budget, retry with key', await x402End(market, before))
  })

  test('fault: confirmations slower than every timeout (the block is not mined): 202 pending; retries with and without the key take nothing more; paid once mined', async () => {
    const market = await x402Market({ receiptTimeoutMs: 1, minConfirmations: 2 })
    const client = x402Buyer(market)
    const before = await balance()
    await anvil.testClient.setAutomine(false)
    try {
      const pending = await client.order('order-slow')
      expect(pending.status).toBe(202)
      const withKey = await client.order('order-slow')
      expect(withKey.json.task_id).toBe(pending.json.task_id)
      const withoutKey = await client.order()
      expect(withoutKey.status).toBe(202)
      expect(withoutKey.json.task_id).toBe(pending.json.task_id)
    } finally {
      await anvil.testClient.setAutomine(true)
    }
    await anvil.mine(2)
    await market.resolve()
    tally('x402: confirmations slower than every timeout', await x402End(market, before))
  })

  test('fault: the process stops between the broadcast and its answer; the client retries on another node, with and without its key', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'settle-server-'))
    folders.push(folder)
    const databaseUrl = `file:${join(folder, 'market.db')}`
    const real = viemX402Facilitator({ rpcUrl: rpc.url, chain: anvil.chain, account: settler })
    let sent: () => void = () => {}
    const broadcast = new Promise<void>((resolve) => {
      sent = resolve
    })
    // The settlement goes out, then this process never answers (its action stops there).
    const stopping: X402Facilitator = {
      verify: real.verify,
      async settle(payload, requirements, beforeBroadcast) {
        await real.settle(payload, requirements, beforeBroadcast)
        sent()
        return new Promise(() => {})
      },
    }
    const first = await x402Market({ databaseUrl, facilitator: stopping })
    const second = await x402Market({ databaseUrl, register: false })
    const before = await balance()
    void x402Buyer(first).order('order-crash')
    await broadcast
    const client = x402Buyer(second)
    const withKey = await client.order('order-crash')
    expect(withKey.status).toBe(202)
    const withoutKey = await client.order()
    expect(withoutKey.json.task_id).toBe(withKey.json.task_id)
    await second.resolve()
    tally('x402: process stops after broadcast, retries on another node', await x402End(second, before))
  })

  test('fault: the paying block is reorged out before its confirmations: still pending (never a new payment), paid once the transaction is mined again', async () => {
    const market = await x402Market({ minConfirmations: 2 })
    const client = x402Buyer(market)
    const before = await balance()
    const snapshot = await anvil.testClient.snapshot()
    const pending = await client.order()
    expect(pending.status).toBe(202)
    const txHash = pending.json.verification.tx_hash as Hex
    const raw = (await anvil.publicClient.request({
      method: 'eth_getRawTransactionByHash' as never,
      params: [txHash] as never,
    })) as Hex
    await anvil.testClient.revert({ id: snapshot })
    expect(await balance()).toBe(before)
    await market.resolve()
    const afterReorg = await market.call('GET', `/api/agents/seller/tasks/${pending.json.task_id}`)
    expect(afterReorg.json.status).toBe('pending_payment')
    // The client polls and retries meanwhile: it is told the same task, and signs nothing that is settled.
    const retried = await client.order()
    expect(retried.json.task_id).toBe(pending.json.task_id)
    // The network mines the reorged transaction again (as a node re-includes it from its pool).
    await anvil.publicClient.request({ method: 'eth_sendRawTransaction', params: [raw] })
    await anvil.mine(2)
    await market.resolve()
    tally('x402: reorged before its confirmations', await x402End(market, before))
  })
})

/** The A2A SDK's client (JSON-RPC) of the seller on `market`, and how it orders and pays by x402 inside A2A. */
async function a2aBuyer(market: X402Market) {
  const client = await sdkClientVia(market.fetchApp, 'JSONRPC', 'http://localhost:3000/api/agents/seller/')
  const send = (data: unknown, extra: Partial<Message> = {}) => sendForTask(client, sdkMessage(data, extra))
  const ordered = await send({ skill: 'deep-search', params: ORDER.params })
  const required = ordered.status?.message?.metadata?.['x402.payment.required'] as PaymentRequired
  /** Pays the task with `payload` (a fresh authorization when not given), as the a2a-x402 extension carries it. */
  const pay = async (payload?: unknown) =>
    send(
      {},
      {
        taskId: ordered.id,
        contextId: ordered.contextId,
        metadata: {
          'x402.payment.status': 'payment-submitted',
          'x402.payment.payload': payload ?? (await x402Payer(buyer).createPaymentPayload(required)),
        },
      },
    )
  const state = async () => {
    const task = await client.getTask({ tenant: '', id: ordered.id, historyLength: undefined })
    return task.status ? taskStateToJSON(task.status.state) : ''
  }
  return { ordered, required, pay, state }
}

describe('x402 inside A2A under faults (the market broadcasts)', () => {
  test('fault: the RPC is down before the broadcast: an error that changed nothing; the same payload then pays the task once', async () => {
    const market = await x402Market()
    const a2a = await a2aBuyer(market)
    const before = await balance()
    const payload = await x402Payer(buyer).createPaymentPayload(a2a.required)
    rpc.down(true)
    await expect(a2a.pay(payload).finally(() => rpc.down(false))).rejects.toThrow(
      /chain_unavailable|unavailable/i,
    )
    expect(await a2a.state()).toBe('TASK_STATE_INPUT_REQUIRED')
    expect(taskStateToJSON((await a2a.pay(payload)).status?.state ?? 0)).toBe('TASK_STATE_WORKING')
    await market.resolve()
    tally('x402 A2A: RPC down before broadcast, same payload resent', await x402End(market, before))
  })

  test('fault: the RPC goes down right after the broadcast: the task waits for the chain, a fresh payment is refused, and it is paid once', async () => {
    const market = await x402Market({ receiptTimeoutMs: 1 })
    const a2a = await a2aBuyer(market)
    const before = await balance()
    const frozen = rpc.freeze('eth_sendRawTransaction')
    const answer = a2a.pay()
    await frozen.reached
    rpc.down(true)
    frozen.release(null)
    await answer
    rpc.down(false)
    // A client that heard nothing clear pays again with a fresh authorization: refused, nothing settled.
    await expect(a2a.pay()).rejects.toThrow(/task_not_pending|already on its way/)
    await market.resolve()
    expect(await a2a.state()).toBe('TASK_STATE_WORKING')
    tally('x402 A2A: RPC down after broadcast, fresh payment resent', await x402End(market, before))
  })
})

describe('x402 rows kept while a payment waits for the chain', () => {
  test('attack: once the re-check pays an A2A payment that waited for the chain, its settlement record and "payment under way" marker are removed; the same authorization sent again (to the paid task or a new order) is still refused', async () => {
    const market = await x402Market({ receiptTimeoutMs: 1 })
    const a2a = await a2aBuyer(market)
    const before = await balance()
    const payload = await x402Payer(buyer).createPaymentPayload(a2a.required)
    const frozen = rpc.freeze('eth_sendRawTransaction')
    const answer = a2a.pay(payload)
    await frozen.reached
    rpc.down(true)
    frozen.release(null)
    await answer
    rpc.down(false)
    const hash = (await market.store.getTask('seller', a2a.ordered.id))?.pendingCheck?.txHash
    if (!hash) throw new Error('the payment is not waiting for the chain')
    const rows = async () => ({
      settlement: (await market.store.kvGet(`x402:settlement:${hash.toLowerCase()}`)) !== null,
      underWay: (await market.store.kvGet(`x402:task:${a2a.ordered.id}`)) !== null,
    })
    expect(await rows()).toEqual({ settlement: true, underWay: true })
    await market.resolve()
    expect(await a2a.state()).toBe('TASK_STATE_WORKING')
    expect(await rows()).toEqual({ settlement: false, underWay: false })
    // The attacker replays the spent authorization after its rows are gone: the authorization marker still refuses it.
    await expect(a2a.pay(payload)).rejects.toThrow(/task_not_pending|already/)
    const another = await a2aBuyer(market)
    await expect(another.pay(payload)).rejects.toThrow(/authorization_already_used/)
    expect(await another.state()).toBe('TASK_STATE_INPUT_REQUIRED')
    tally('x402 A2A: replay after the settlement rows are removed', await x402End(market, before))
  })
})

describe('x402 rows of a payment paid at once', () => {
  test('attack: an order and an A2A payment paid at once keep no settlement record or payment marker; the spent authorization sent again with another order is still refused', async () => {
    const market = await x402Market()
    // The order claims the market writes (the order's body, an Idempotency-Key), recorded to look them up after.
    const claims = new Set<string>()
    const updateAll = market.store.kvUpdateAll.bind(market.store)
    market.store.kvUpdateAll = (keys, change) => {
      for (const key of keys) if (key.startsWith('x402:order:')) claims.add(key)
      return updateAll(keys, change)
    }
    const client = x402Buyer(market)
    const before = await balance()
    const paid = await client.order()
    expect(paid.status).toBe(201)
    const keyed = await client.order('order-keyed')
    expect(keyed.status).toBe(201)
    const claimed = async () =>
      (
        await Promise.all(
          [...claims].map(async (key) =>
            (await market.store.kvGet(key)) === null ? [] : [key.split(':')[4]],
          ),
        )
      ).flat()
    // Paid: the body's claim (read by retries without a key while unresolved) is gone; the key's claim stays its 24 h.
    expect(await claimed()).toEqual(['key'])
    expect((await client.order('order-keyed')).json.task_id).toBe(keyed.json.task_id)
    await market.market.expireUnpaidTasks()
    market.clock.advance(26 * 3_600_000)
    await market.market.expireUnpaidTasks()
    expect(await claimed()).toEqual([])
    const a2a = await a2aBuyer(market)
    const payload = await x402Payer(buyer).createPaymentPayload(a2a.required)
    expect(taskStateToJSON((await a2a.pay(payload)).status?.state ?? 0)).toBe('TASK_STATE_WORKING')
    const hashes = await Promise.all(
      [paid.json.task_id, a2a.ordered.id].map(
        async (id: string) => (await market.store.getTask('seller', id))?.payment?.txHash ?? '',
      ),
    )
    for (const hash of hashes)
      expect(await market.store.kvGet(`x402:settlement:${hash.toLowerCase()}`)).toBeNull()
    expect(await market.store.kvGet(`x402:task:${a2a.ordered.id}`)).toBeNull()
    // The spent authorizations sent again with other orders: refused by the authorization marker, nothing settled.
    const replay = await market.call('POST', PATH, {
      body: { ...ORDER, params: { q: 'another order' } },
      headers: { 'payment-signature': client.sent[0] ?? '' },
    })
    expect(replay.status).toBe(409)
    expect(replay.json.code).toBe('authorization_already_used')
    await expect((await a2aBuyer(market)).pay(payload)).rejects.toThrow(/authorization_already_used/)
    tally('x402: replays after the rows of payments paid at once are removed', {
      ...(await x402End(market, before)),
      meant: 3,
    })
  })
})

describe('x402 authorization markers after their authorization expires', () => {
  test("attack: the spent authorization's marker is removed by the expiry pass once validBefore has passed; the authorization replayed after that still pays nothing", async () => {
    const market = await x402Market()
    const a2a = await a2aBuyer(market)
    const before = await balance()
    const payload = await x402Payer(buyer).createPaymentPayload(a2a.required)
    expect(taskStateToJSON((await a2a.pay(payload)).status?.state ?? 0)).toBe('TASK_STATE_WORKING')
    const { from, nonce, validBefore } = (
      payload.payload as { authorization: { from: string; nonce: string; validBefore: string } }
    ).authorization
    const marker = `x402:authorization:${from.toLowerCase()}:${nonce.toLowerCase()}`
    await market.market.expireUnpaidTasks()
    expect(await market.store.kvGet(marker)).not.toBeNull()
    // The market's clock passes validBefore (and the slack) by a little more than an hour: the next passes remove it.
    market.clock.set(new Date((Number(validBefore) + 120) * 1000 + 3_600_000 + 1))
    for (let pass = 0; pass < 20 && (await market.store.kvGet(marker)) !== null; pass++)
      await market.market.expireUnpaidTasks()
    expect(await market.store.kvGet(marker)).toBeNull()
    // The attacker replays the authorization with a new order: the chain has its nonce used, so nothing is settled.
    const another = await a2aBuyer(market)
    await another.pay(payload).catch(() => null)
    expect(await another.state()).toBe('TASK_STATE_INPUT_REQUIRED')
    tally('x402: authorization replayed after its marker expired', await x402End(market, before))
  })
})

describe('x402 on the real server under an RPC fault', () => {
  test('fault: the RPC fails during verification on a `bun start` node: it answers 503 and keeps running (a half-read verdict no longer ends the process), then takes the payment once', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'settle-server-node-'))
    folders.push(folder)
    const server = await startMarketServer({
      HOME: folder,
      DATABASE_URL: `file:${join(folder, 'market.db')}`,
      CHAIN_RPC_URL: rpc.url,
      MIN_CONFIRMATIONS: '1',
      BASE_URL: 'https://market.example',
      X402_SETTLER_KEY: toHex(settler.getHdKey().privateKey ?? new Uint8Array()),
    })
    try {
      const json = { 'content-type': 'application/json' }
      const registered = (await (
        await fetch(`${server.base}/api/agents/register`, {
          method: 'POST',
          headers: json,
          body: JSON.stringify({ name: 'seller', skills: [SKILL] }),
        })
      ).json()) as { apiKey: string }
      await fetch(`${server.base}/api/agents/seller`, {
        method: 'PUT',
        headers: { ...json, authorization: `Bearer ${registered.apiKey}` },
        body: JSON.stringify({ walletAddress: seller.address }),
      })
      const paying = wrapFetchWithPayment(fetch, x402Payer(buyer))
      const order = () =>
        paying(`${server.base}${PATH}`, { method: 'POST', headers: json, body: JSON.stringify(ORDER) })
      const before = await balance()
      // The signature check's read fails while the token's code is still being read: both must come to an answer.
      rpc.down(true)
      const failed = await order().finally(() => rpc.down(false))
      expect(failed.status).toBe(503)
      expect(((await failed.json()) as { code: string }).code).toBe('chain_unavailable')
      const paid = await order()
      expect(paid.status).toBe(201)
      expect(server.process.exitCode).toBeNull()
      const tasks = (await (
        await fetch(`${server.base}/api/agents/seller/tasks?status=all`, {
          headers: { authorization: `Bearer ${registered.apiKey}` },
        })
      ).json()) as { tasks: { status: string }[] }
      tally('x402: RPC fails during verification on a real server', {
        charged: Number((before - (await balance())) / PRICE),
        served: tasks.tasks.filter((task) => task.status === 'paid').length,
      })
    } finally {
      server.stop()
    }
  })
})

/** A market taking MPP on a scripted Tempo node, with one seller. */
async function mppMarket(node: ScriptedTempo) {
  const app = await testApp('2026-06-01T12:00:00.000Z', {
    mpp: {
      secretKey: 'settlement-faults-secret-of-32-bytes!!',
      realm: 'localhost',
      currency: TEMPO_USDC_E,
      getClient: () => node.client('server'),
    },
  })
  const { key } = await app.register('seller', { skills: [SKILL] })
  await app.call('PUT', '/api/agents/seller', { key, body: { walletAddress: tempoPayer(1).address } })
  const handle = ((input: RequestInfo | URL, init?: RequestInit) =>
    app.app.handle(new Request(input, init))) as typeof fetch
  const paidTasks = async () =>
    (
      (await app.call('GET', '/api/agents/seller/tasks?status=all', { key })).json.tasks as {
        status: string
      }[]
    ).filter((task) => task.status === 'paid').length
  return { ...app, handle, paidTasks }
}

/** How a buyer's client retries an MPP order: its Idempotency-Key, and what it does on 503 outcome_unknown. */
type MppRetry = {
  idempotencyKey?: string
  /** `resend` the same credential as told (default), or order `afresh` (a new credential, as a client that lost it). */
  onUnknown?: 'resend' | 'afresh'
}

/**
 * The buyer's real mppx client (pull mode: it signs, the market broadcasts) acting as a client does on an answer:
 * 503 outcome_unknown, resend the same credential as told (or sign a new one, `onUnknown: 'afresh'`); any other
 * failure, order afresh (a new credential).
 */
async function mppOrder(node: ScriptedTempo, handle: typeof fetch, attempts = 3, retry: MppRetry = {}) {
  const credentials: string[] = []
  const client = MppxClient.create({
    polyfill: false,
    fetch: handle,
    methods: [tempoClient.charge({ account: tempoPayer(2), getClient: () => node.client('client') })],
  })
  client.onCredentialCreated(({ credential }) => {
    credentials.push(credential)
  })
  const url = `http://localhost${PATH}`
  // A fresh init each time: the client may change the one it is given.
  const init = (authorization?: string) => ({
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(authorization ? { authorization } : {}),
      ...(retry.idempotencyKey ? { 'idempotency-key': retry.idempotencyKey } : {}),
    },
    body: JSON.stringify(ORDER),
  })
  const answers: { status: number; code?: string; task_id?: string }[] = []
  let answer = await client.fetch(url, init())
  for (let attempt = 1; ; attempt++) {
    const body = (await answer.json().catch(() => ({}))) as { code?: string; task_id?: string }
    answers.push({ status: answer.status, code: body.code, task_id: body.task_id })
    if (answer.status < 300 || attempt >= attempts) break
    answer =
      body.code === 'outcome_unknown' && retry.onUnknown !== 'afresh'
        ? await handle(url, init(credentials.at(-1)))
        : await client.fetch(url, init())
  }
  return { answers, credentials }
}

/** The signed transaction a pull-mode MPP credential carries (what any node holding it can mine). */
function signedTransferOf(credential: string): Hex {
  const payload = Credential.deserialize(Credential.extractPaymentScheme(credential) ?? '').payload as {
    signature: Hex
  }
  return payload.signature
}

/** Transfers the scripted node mined to the seller: one per charge. */
const mppCharges = (node: ScriptedTempo) => node.mined().length

describe('MPP broadcast under faults (the market broadcasts the signed transfer)', () => {
  test('fault: the node mines the broadcast and its answer is lost: the market finds the transfer and answers 201, one charge', async () => {
    const node = scriptedTempo()
    const market = await mppMarket(node)
    node.failNextBroadcast()
    const { answers } = await mppOrder(node, market.handle)
    expect(answers[0]?.status).toBe(201)
    tally('mpp: mined, answer lost', { charged: mppCharges(node), served: await market.paidTasks() })
  })

  test('fault: the node drops the broadcast unmined: 503 outcome_unknown, the same credential resent pays once', async () => {
    const node = scriptedTempo()
    const market = await mppMarket(node)
    node.dropNextBroadcast()
    const { answers } = await mppOrder(node, market.handle)
    expect(answers.map((answer) => answer.status)).toEqual([503, 201])
    expect(answers[0]?.code).toBe('outcome_unknown')
    tally('mpp: dropped unmined, same credential resent', {
      charged: mppCharges(node),
      served: await market.paidTasks(),
    })
  })

  test('fault: the node mines, then both the broadcast answer and the receipt read fail: outcome_unknown, the same credential resent gets the task, one charge', async () => {
    const node = scriptedTempo()
    const market = await mppMarket(node)
    node.failNextBroadcast()
    node.failNextReceipt()
    const { answers } = await mppOrder(node, market.handle)
    expect(answers.map((answer) => answer.status)).toEqual([503, 201])
    tally('mpp: mined, answer and receipt lost', {
      charged: mppCharges(node),
      served: await market.paidTasks(),
    })
  })

  test('fault: the order is paid and its answer lost on the way to the buyer; a retry with its Idempotency-Key and a new credential gets that task, the new credential is never broadcast', async () => {
    const node = scriptedTempo()
    const market = await mppMarket(node)
    const first = await mppOrder(node, market.handle, 3, { idempotencyKey: 'mpp-answer-lost' })
    expect(first.answers.map((answer) => answer.status)).toEqual([201])
    // The buyer never read that 201: it orders again with the same key, signing a new transfer.
    const retry = await mppOrder(node, market.handle, 3, { idempotencyKey: 'mpp-answer-lost' })
    expect(retry.answers.map((answer) => answer.status)).toEqual([200])
    expect(retry.answers[0]?.task_id).toBe(first.answers[0]?.task_id)
    tally('mpp: paid, answer lost, new credential with key', {
      charged: mppCharges(node),
      served: await market.paidTasks(),
    })
  })

  for (const idempotencyKey of ['mpp-unknown-mined', undefined])
    test(`fault: the node mines, the broadcast answer and the receipt read fail (503 outcome_unknown); the buyer signs a new credential ${idempotencyKey ? 'with its Idempotency-Key' : 'without a key'}: the first transfer is found and serves the order, the new one is never broadcast`, async () => {
      const node = scriptedTempo()
      const market = await mppMarket(node)
      node.failNextBroadcast()
      node.failNextReceipt()
      const { answers, credentials } = await mppOrder(node, market.handle, 3, {
        idempotencyKey,
        onUnknown: 'afresh',
      })
      expect(answers.map((answer) => answer.status)).toEqual([503, 201])
      expect(credentials).toHaveLength(2)
      expect(node.mined()).toEqual([keccak256(signedTransferOf(credentials[0] ?? ''))])
      tally(`mpp: mined, outcome unknown, new credential ${idempotencyKey ? 'with' : 'without'} key`, {
        charged: mppCharges(node),
        served: await market.paidTasks(),
      })
    })

  for (const idempotencyKey of ['mpp-unknown-dropped', undefined])
    test(`fault: the node drops the broadcast unmined (503 outcome_unknown) but keeps it in its pool; the buyer signs a new credential ${idempotencyKey ? 'with its Idempotency-Key' : 'without a key'}: the market sends the first transfer again, never the new one, and the pool's late copy takes nothing more`, async () => {
      const node = scriptedTempo()
      const market = await mppMarket(node)
      node.dropNextBroadcast()
      const { answers, credentials } = await mppOrder(node, market.handle, 3, {
        idempotencyKey,
        onUnknown: 'afresh',
      })
      expect(answers.map((answer) => answer.status)).toEqual([503, 201])
      // Another node of the network had the first transfer in its pool and sends it late: mined already, it moves
      // nothing more.
      const late = node.client('network').request({
        method: 'eth_sendRawTransaction',
        params: [signedTransferOf(credentials[0] ?? '')],
      } as never)
      await expect(late).rejects.toThrow(/already mined/)
      expect(node.mined()).toEqual([keccak256(signedTransferOf(credentials[0] ?? ''))])
      tally(`mpp: dropped unmined, new credential ${idempotencyKey ? 'with' : 'without'} key`, {
        charged: mppCharges(node),
        served: await market.paidTasks(),
      })
    })

  test('fault: the node drops the broadcast (503 outcome_unknown) and the first transfer expires unmined: a new credential of the same order is then its payment, once', async () => {
    const node = scriptedTempo()
    const market = await mppMarket(node)
    node.dropNextBroadcast()
    const first = await mppOrder(node, market.handle, 1)
    expect(first.answers.map((answer) => answer.status)).toEqual([503])
    // The network's time passes the first transfer's validBefore (mppx signs at most 25 s ahead): it can never be mined.
    node.advanceTime(3_600)
    const again = await mppOrder(node, market.handle, 1)
    expect(again.answers.map((answer) => answer.status)).toEqual([201])
    expect(node.mined()).toEqual([keccak256(signedTransferOf(again.credentials[0] ?? ''))])
    tally('mpp: dropped, first transfer expired, new credential', {
      charged: mppCharges(node),
      served: await market.paidTasks(),
    })
  })

  test("fault: the first transfer is mined reverted (it moved nothing) and its answer lost (503 outcome_unknown): a new credential with the same Idempotency-Key is then the order's payment, once", async () => {
    const node = scriptedTempo()
    const market = await mppMarket(node)
    // Mined reverted, and the broadcast's answer lost: the market cannot tell it paid nothing until it reads it.
    node.revertNextBroadcast()
    node.failNextBroadcast()
    const first = await mppOrder(node, market.handle, 1, { idempotencyKey: 'mpp-reverted' })
    expect(first.answers).toMatchObject([{ status: 503, code: 'outcome_unknown' }])
    const again = await mppOrder(node, market.handle, 1, { idempotencyKey: 'mpp-reverted' })
    expect(again.answers.map((answer) => answer.status)).toEqual([201])
    const paidBy = keccak256(signedTransferOf(again.credentials[0] ?? ''))
    // The reverted transfer took nothing: the charges are the transfers mined with success.
    const charged = node.mined().filter((hash) => node.receipt(hash)?.status === '0x1')
    expect(charged).toEqual([paidBy])
    tally('mpp: first transfer reverted, new credential', {
      charged: charged.length,
      served: await market.paidTasks(),
    })
  })
})
