import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Store, X402Facilitator } from '@agentmarket/core'
import { viemChain, viemX402Facilitator } from '@agentmarket/core/viem'
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  encodePaymentSignatureHeader,
} from '@x402/core/http'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { wrapFetchWithPayment } from '@x402/fetch'
import { type Hex, toHex } from 'viem'
import type { HDAccount } from 'viem/accounts'
import { settlementKey } from '../packages/core/src/payments/X402.ts'
import { testApp } from '../packages/server/src/testing/http.ts'
import { libsqlStore, openDatabase } from '../packages/store-libsql/src/index.ts'
import { type Anvil, paymentChain, USDC_ADDRESS } from './support/anvil.ts'
import { type MarketServer, startMarketServer } from './support/process.ts'
import { countedWrites } from './support/storeWrites.ts'
import { signedPayment, x402Payer } from './support/x402.ts'

const PRICE = 500_000n // 0.5 USDC: under the x402 client's default cap of $1 a payment
const SKILL = { name: 'Deep Search', type: 'purchasable', price: '0.5' }
const PATH = '/api/agents/seller/tasks/deep-search'

let anvil: Anvil
let buyer: HDAccount
let seller: HDAccount
let settler: HDAccount
let thief: HDAccount
let secondSettler: HDAccount
const folders: string[] = []

beforeAll(async () => {
  const chain = await paymentChain(['buyer', 'seller', 'settler', 'thief', 'secondSettler'], {
    funded: ['buyer'],
  })
  ;({ anvil } = chain)
  ;({ buyer, seller, settler, thief, secondSettler } = chain.accounts)
})

afterAll(() => {
  anvil?.stop()
  for (const folder of folders) rmSync(folder, { recursive: true, force: true })
})

/** The marketplace's own facilitator on anvil, settling from the `settler` account. */
const facilitator = () => viemX402Facilitator({ rpcUrl: anvil.rpcUrl, chain: anvil.chain, account: settler })

/** A market taking x402 on anvil (one confirmation), a seller selling a 0.5 USDC skill; `databaseUrl` shares one file. */
async function market(
  options: {
    databaseUrl?: string
    register?: boolean
    x402?: X402Facilitator
    store?: Store
    minConfirmations?: number
  } = {},
) {
  const app = await testApp('2026-06-01T12:00:00.000Z', {
    chain: viemChain({ rpcUrl: anvil.rpcUrl, timeoutMs: 10_000 }),
    chainConfig: { minConfirmations: options.minConfirmations ?? 1 },
    databaseUrl: options.databaseUrl,
    store: options.store,
    x402: { facilitator: options.x402 ?? facilitator() },
  })
  let key = ''
  if (options.register !== false) {
    ;({ key } = await app.register('seller', { skills: [SKILL] }))
    await app.call('PUT', '/api/agents/seller', { key, body: { walletAddress: seller.address } })
  }
  /** The seller's work queue: every task, in full. */
  const queue = async () => (await app.call('GET', '/api/agents/seller/tasks?status=all', { key })).json
  /** fetch over the in-process app, as a real client's requests would arrive. */
  const fetchApp = (input: RequestInfo | URL, init?: RequestInit) => app.app.handle(new Request(input, init))
  return { ...app, fetchApp, queue }
}

/** The official x402 v2 client paying with `account` on Base (chain 8453) only. */
function payingFetch(fetchApp: typeof fetch, account: HDAccount = buyer) {
  return wrapFetchWithPayment(fetchApp, x402Payer(account))
}

/** The offer of a 402 answer, decoded from PAYMENT-REQUIRED. */
async function offerOf(app: Awaited<ReturnType<typeof market>>, body: unknown = { params: { q: 'x' } }) {
  const answer = await app.call('POST', PATH, { body })
  expect(answer.status).toBe(402)
  const header = answer.headers.get('payment-required')
  if (!header) throw new Error('no PAYMENT-REQUIRED header')
  return { answer, required: decodePaymentRequiredHeader(header) }
}

/** An authorization of the buyer's money signed by the thief: the signature is not the payer's. */
async function forged(accepted: PaymentRequirements): Promise<PaymentPayload> {
  const signed = await signedPayment(accepted, thief)
  const payload = signed.payload as { authorization: Record<string, string>; signature: Hex }
  return {
    ...signed,
    payload: { ...payload, authorization: { ...payload.authorization, from: buyer.address } },
  }
}

/** Sends the order with an x402 payment header. */
const payWith = (app: Awaited<ReturnType<typeof market>>, payload: PaymentPayload, body: unknown = {}) =>
  app.call('POST', PATH, { body, headers: { 'payment-signature': encodePaymentSignatureHeader(payload) } })

describe('x402 v2 beside MPP on the per-skill endpoints', () => {
  test("behavior: an order waiting for its confirmations is paid by the re-check, which removes the settlement's record and the order's waiting claim in one write", async () => {
    const { store, state } = countedWrites(libsqlStore(await openDatabase(':memory:')))
    const app = await market({ store, minConfirmations: 2 })
    const { required } = await offerOf(app)
    const payload = await signedPayment(required.accepts[0] as PaymentRequirements, buyer)
    const pending = await payWith(app, payload, { params: { q: 'waits' } })
    expect(pending.status).toBe(202)
    await anvil.testClient.mine({ blocks: 1 })
    app.clock.advance(60_000)
    state.counting = true
    await app.market.recheckPendingPayments()
    state.counting = false
    expect((await app.queue()).tasks.map((task: { status: string }) => task.status)).toEqual(['paid'])
    expect(state.writes.filter((write) => write !== 'claimDueRechecks')).toEqual([
      'markTaskPaid',
      'kvUpdateAll',
    ])
    const txHash = pending.json.verification.tx_hash as Hex
    expect(await store.kvGet(settlementKey(txHash))).toBeNull()
  })

  for (const idempotencyKey of [null, 'order-writes'])
    test(`behavior: a paid order ${idempotencyKey ? 'with an Idempotency-Key ' : ''}writes the store five times in four commits: its claims with the authorization's marker in one write, then the settlement's record and its task together before the broadcast, its paid mark, its record and waiting claim removed in one write`, async () => {
      const { store, state } = countedWrites(libsqlStore(await openDatabase(':memory:')))
      const honest = facilitator()
      // What the store held when the settlement was about to be sent: the writes so far, the record, the task.
      let atBroadcast: { writes: string[]; record: unknown; tasks: number } | null = null
      const watching: X402Facilitator = {
        verify: (payload, requirements) => honest.verify(payload, requirements),
        settle: (payload, requirements, beforeBroadcast, chain) =>
          honest.settle(
            payload,
            requirements,
            async (txHash) => {
              await beforeBroadcast(txHash)
              const record = await store.kvGet(settlementKey(txHash))
              atBroadcast = { writes: [...state.writes], record, tasks: (await app.queue()).total }
            },
            chain,
          ),
      }
      const app = await market({ store, x402: watching })
      const { required } = await offerOf(app)
      const payload = await signedPayment(required.accepts[0] as PaymentRequirements, buyer)
      state.counting = true
      const answer = await app.call('POST', PATH, {
        body: { params: { q: 'writes' } },
        headers: {
          'payment-signature': encodePaymentSignatureHeader(payload),
          ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
        },
      })
      state.counting = false
      expect(answer.status).toBe(201)
      expect(state.writes).toEqual([
        'kvUpdateAll',
        'kvUpdateAll',
        'insertTask',
        'markTaskPaid',
        'kvUpdateAll',
      ])
      // The record and the task are asked for together (one group commit on store-libsql), and only they.
      expect(state.overlaps).toEqual([['kvUpdateAll', 'insertTask']])
      // Crash safety: the record and the task were committed before the transaction was sent.
      expect(atBroadcast).toMatchObject({
        writes: ['kvUpdateAll', 'kvUpdateAll', 'insertTask'],
        record: { payer: buyer.address },
        tasks: 1,
      })
      const txHash = decodePaymentResponseHeader(answer.headers.get('payment-response') ?? '')
        .transaction as Hex
      expect(await store.kvGet(settlementKey(txHash))).toBeNull()
    })

  test('behavior: the 402 offers x402 exact on Base USDC to the seller wallet, with the problem body as before', async () => {
    const app = await market()
    const { answer, required } = await offerOf(app)
    expect(answer.json.code).toBe('payment_required')
    expect(answer.headers.get('content-type')).toContain('application/problem+json')
    expect(required.x402Version).toBe(2)
    expect(required.resource.url).toBe(`http://localhost:3000${PATH}`)
    expect(required.accepts).toEqual([
      {
        scheme: 'exact',
        network: 'eip155:8453',
        asset: USDC_ADDRESS,
        amount: PRICE.toString(),
        payTo: seller.address,
        maxTimeoutSeconds: 300,
        extra: { name: 'USD Coin', version: '2' },
      },
    ])
  })

  test("behavior: the official x402 client pays; the task is paid (method x402) with the settlement's hash, the seller got the price", async () => {
    const app = await market()
    const [buyerBefore, sellerBefore] = await Promise.all([
      anvil.usdcOf(buyer.address),
      anvil.usdcOf(seller.address),
    ])
    const paid = await payingFetch(app.fetchApp as typeof fetch)(`http://localhost${PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ params: { q: 'rust' }, buyer: 'scout' }),
    })
    expect(paid.status).toBe(201)
    const task = await paid.json()
    const settled = decodePaymentResponseHeader(paid.headers.get('payment-response') ?? '')
    expect(settled).toMatchObject({ success: true, network: 'eip155:8453', payer: buyer.address })
    expect(task).toMatchObject({
      status: 'paid',
      params: { q: 'rust' },
      buyer: 'scout',
      buyer_wallet: buyer.address,
    })
    expect(task.payment).toMatchObject({ method: 'x402', tx_hash: settled.transaction, from: buyer.address })
    // A paid task asks for nothing more.
    expect(task.next_steps.pay).toBe('Nothing to pay: the task is paid.')
    expect(await anvil.usdcOf(buyer.address)).toBe(buyerBefore - PRICE)
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
    // The settlement was sent by the market's settler, and moved the buyer's money straight to the seller.
    const receipt = await anvil.publicClient.getTransactionReceipt({ hash: settled.transaction as Hex })
    expect(receipt.from.toLowerCase()).toBe(settler.address.toLowerCase())
    expect((await app.call('GET', `/api/agents/seller/tasks/${task.task_id}`)).json.status).toBe('paid')
    const feed = (await app.call('GET', '/api/feed/live')).json
    expect(feed.events.map((event: { kind?: string; type?: string }) => event.kind ?? event.type)).toContain(
      'task.paid',
    )
  })

  test('attack: the same PAYMENT-SIGNATURE again (a replay, or a chain observer rebuilding it) gets 409 and no task; money moves once', async () => {
    const app = await market()
    const { required } = await offerOf(app, {})
    const [accepted] = required.accepts
    if (!accepted) throw new Error('no offer')
    const payload = await signedPayment(accepted, buyer)
    expect((await payWith(app, payload)).status).toBe(201)
    const sellerAfterOne = await anvil.usdcOf(seller.address)
    const again = await payWith(app, payload)
    expect(again.status).toBe(409)
    expect(again.json.code).toBe('authorization_already_used')
    expect(again.text).not.toContain('task_')
    const other = await payWith(app, payload, { params: { q: 'another order' } })
    expect(other.status).toBe(409)
    expect(await anvil.usdcOf(seller.address)).toBe(sellerAfterOne)
    expect((await app.queue()).total).toBe(1)
  })

  test('attack: one authorization sent to two nodes on one database at once pays exactly one task', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'x402-nodes-'))
    folders.push(folder)
    const databaseUrl = `file:${join(folder, 'market.db')}`
    const first = await market({ databaseUrl })
    const second = await market({ databaseUrl, register: false })
    const { required } = await offerOf(first, {})
    const [accepted] = required.accepts
    if (!accepted) throw new Error('no offer')
    const payload = await signedPayment(accepted, buyer)
    const sellerBefore = await anvil.usdcOf(seller.address)
    const answers = await Promise.all([
      payWith(first, payload),
      payWith(second, payload),
      payWith(first, payload),
    ])
    // The winner is 201, or 202 when the chain answered slower than the market's 2 s read bound (a busy machine): its
    // settlement is then paid by the re-check. Either way one task is paid, once.
    const statuses = answers.map((answer) => answer.status).sort()
    expect(statuses.slice(1)).toEqual([409, 409])
    expect([201, 202]).toContain(statuses[0] as number)
    const paid = async () =>
      (await first.queue()).tasks.filter((task: { status: string }) => task.status === 'paid').length
    for (let round = 0; round < 20 && (await paid()) === 0; round++) {
      first.clock.advance(60_000)
      await first.market.recheckPendingPayments()
    }
    expect(await paid()).toBe(1)
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
  })

  test('attack: an expired authorization, a lower amount, another recipient, or an edited offer pay nothing', async () => {
    const app = await market()
    const { required } = await offerOf(app, {})
    const [accepted] = required.accepts
    if (!accepted) throw new Error('no offer')
    const before = await Promise.all([anvil.usdcOf(buyer.address), anvil.usdcOf(thief.address)])
    const cases: [PaymentPayload, string][] = [
      [
        await signedPayment(accepted, buyer, { validBefore: BigInt(Math.floor(Date.now() / 1000) - 10) }),
        'valid_before',
      ],
      [await signedPayment(accepted, buyer, { value: PRICE - 1n }), 'value_mismatch'],
      [await signedPayment(accepted, buyer, { to: thief.address }), 'recipient_mismatch'],
      [await signedPayment({ ...accepted, amount: '1' }, buyer, { value: 1n }), 'requirements_mismatch'],
      [await signedPayment({ ...accepted, payTo: thief.address }, buyer), 'requirements_mismatch'],
      [await forged(accepted), 'signature'],
    ]
    for (const [payload, reason] of cases) {
      const answer = await payWith(app, payload)
      expect(answer.status, reason).toBe(402)
      expect(answer.json.code).toBe('x402_payment_invalid')
      const again = decodePaymentRequiredHeader(answer.headers.get('payment-required') ?? '')
      expect(again.error ?? '', reason).toContain(reason)
      expect(again.accepts).toEqual(required.accepts)
    }
    expect(await Promise.all([anvil.usdcOf(buyer.address), anvil.usdcOf(thief.address)])).toEqual(before)
    expect((await app.queue()).total).toBe(0)
  })

  test('error: an undecodable PAYMENT-SIGNATURE is a 402 that says what to send instead, and changes nothing', async () => {
    const app = await market()
    for (const header of ['not base64 at all!', btoa('{"x402Version":2}'), btoa('[]'), 'A'.repeat(10_000)]) {
      const answer = await app.call('POST', PATH, { body: {}, headers: { 'payment-signature': header } })
      expect(answer.status).toBe(402)
      expect(answer.json.code).toBe('x402_payment_invalid')
      expect(answer.json.detail).toContain('PAYMENT-REQUIRED')
      expect(decodePaymentRequiredHeader(answer.headers.get('payment-required') ?? '').error).toBe(
        'invalid_payload',
      )
    }
    expect((await app.queue()).total).toBe(0)
  })

  test('behavior: a crash after the settlement is sent loses nothing: the stored task is paid by the background re-check', async () => {
    // The settlement goes out, then the process stops before it answers: the request never completes.
    const real = facilitator()
    let sent: () => void = () => {}
    const broadcast = new Promise<void>((resolve) => {
      sent = resolve
    })
    const crashing: X402Facilitator = {
      verify: real.verify,
      async settle(payload, requirements, beforeBroadcast) {
        await real.settle(payload, requirements, beforeBroadcast)
        sent()
        return new Promise(() => {})
      },
    }
    const app = await market({ x402: crashing })
    const { required } = await offerOf(app, {})
    const [accepted] = required.accepts
    if (!accepted) throw new Error('no offer')
    const sellerBefore = await anvil.usdcOf(seller.address)
    void payWith(app, await signedPayment(accepted, buyer))
    await broadcast
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
    const stored = await app.queue()
    expect(stored.total).toBe(1)
    expect(stored.tasks[0].status).toBe('pending_payment')
    app.clock.advance(60_000)
    const report = await app.market.recheckPendingPayments()
    expect(report.paid).toBe(1)
    const task = (await app.queue()).tasks[0]
    expect(task.status).toBe('paid')
    expect(task.payment).toMatchObject({ method: 'x402', from: buyer.address })
  })

  test('behavior: two server processes (each its own X402_SETTLER_KEY): the official client pays over HTTP once; its payment replayed to both is refused', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'x402-servers-'))
    folders.push(folder)
    const env = (key: HDAccount) => ({
      HOME: folder,
      DATABASE_URL: `file:${join(folder, 'market.db')}`,
      CHAIN_RPC_URL: anvil.rpcUrl,
      MIN_CONFIRMATIONS: '1',
      BASE_URL: 'https://market.example',
      X402_SETTLER_KEY: toHex(key.getHdKey().privateKey ?? new Uint8Array()),
    })
    const servers: MarketServer[] = [await startMarketServer(env(settler))]
    servers.push(await startMarketServer(env(secondSettler)))
    try {
      const [a = '', b = ''] = servers.map((server) => server.base)
      const registered = (await (
        await fetch(`${a}/api/agents/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'seller', skills: [SKILL] }),
        })
      ).json()) as { apiKey: string }
      await fetch(`${a}/api/agents/seller`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${registered.apiKey}` },
        body: JSON.stringify({ walletAddress: seller.address }),
      })
      const unpaid = await fetch(`${b}${PATH}`, { method: 'POST' })
      expect(unpaid.status).toBe(402)
      // One answer, both protocols: MPP's challenge and x402's offer.
      expect(unpaid.headers.get('www-authenticate')).toStartWith('Payment ')
      expect(
        decodePaymentRequiredHeader(unpaid.headers.get('payment-required') ?? '').accepts[0]?.payTo,
      ).toBe(seller.address)
      const sent: string[] = []
      const recording = (input: RequestInfo | URL, init?: RequestInit) => {
        const signature = new Headers(
          init?.headers ?? (input instanceof Request ? input.headers : undefined),
        ).get('payment-signature')
        if (signature) sent.push(signature)
        return fetch(input, init)
      }
      const sellerBefore = await anvil.usdcOf(seller.address)
      const paid = await payingFetch(recording as typeof fetch)(`${b}${PATH}`, { method: 'POST' })
      expect(paid.status).toBe(201)
      expect(((await paid.json()) as { status: string }).status).toBe('paid')
      expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
      expect(sent.length).toBe(1)
      const replays = await Promise.all(
        [a, b, a, b].map((base) =>
          fetch(`${base}${PATH}`, { method: 'POST', headers: { 'payment-signature': sent[0] ?? '' } }),
        ),
      )
      expect(replays.map((answer) => answer.status)).toEqual([409, 409, 409, 409])
      expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
    } finally {
      for (const server of servers) server.stop()
    }
  }, 300_000)
})
