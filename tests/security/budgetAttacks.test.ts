import { describe, expect, test } from 'bun:test'
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import type { PaymentRequirements } from '@x402/core/types'
import { wrapFetchWithPayment } from '@x402/fetch'
import { Mppx as MppxClient, tempo as tempoClient } from 'mppx/client'
import type { LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { signedBudget } from '../../packages/server/src/testing/budgets.ts'
import { TEST_BASE_URL, type TestAppOptions, testApp } from '../../packages/server/src/testing/http.ts'
import { type ScriptedTempo, scriptedTempo, TEMPO_USDC_E, tempoPayer } from '../support/tempo.ts'
import { signedPayment, x402AppOptions, x402ChainForSuite, x402Payer } from '../support/x402.ts'

// Money paths under a spending budget: a refused order never takes the buyer's money, whichever way it pays, and
// racing payments never spend more than the budget.
const owner = privateKeyToAccount(generatePrivateKey())
const SECRET = 'budget-attack-secret-of-at-least-32-bytes!!'
const x402 = x402ChainForSuite()

/**
 * A market (`options`) selling `price` USDC from `seller` (wallet `sellerWallet`), and buyer-bot paired to `owner`
 * with a budget of `perDay` USDC a day.
 */
async function budgetedMarket(options: TestAppOptions, price: string, sellerWallet: string, perDay: number) {
  const app = await testApp('2026-06-01T12:00:00.000Z', options)
  const buyer = await app.register('buyer-bot')
  expect((await app.pair('owner', buyer.pairingCode, owner)).status).toBe(200)
  const { key } = await app.register('seller', { skills: [{ name: 'Summary', type: 'purchasable', price }] })
  await app.call('PUT', '/api/agents/seller', { key, body: { walletAddress: sellerWallet } })
  const now = app.clock.now().getTime()
  const fields = {
    agent: 'buyer-bot',
    perTaskMax: perDay,
    perDayMax: perDay,
    expiresAt: new Date(now + 86_400_000),
    issuedAt: new Date(now - 1000),
  }
  const set = await app.call('PUT', '/api/agents/buyer-bot/budget', {
    body: await signedBudget(owner, fields, TEST_BASE_URL),
  })
  expect(set.status).toBe(200)
  const handle = (input: RequestInfo | URL, init?: RequestInit) => app.app.handle(new Request(input, init))
  const budget = async () => (await app.call('GET', '/api/agents/buyer-bot/budget', { key: buyer.key })).json
  const order = { buyer: 'buyer-bot' }
  const url = 'http://localhost/api/agents/seller/tasks/summary'
  return { ...app, buyerKey: buyer.key, handle, budget, order, url }
}

/** The JSON POST init of `body` with extra headers. */
const post = (body: unknown, headers: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
})

describe('budgets and machine payments (MPP, real mppx client, pull mode)', () => {
  /** A budgeted market taking MPP on a scripted Tempo node: 0.01 USDC.e orders, 0.02 a day. */
  async function mppMarket() {
    const node = scriptedTempo()
    const mpp = {
      secretKey: SECRET,
      realm: 'localhost',
      currency: TEMPO_USDC_E,
      getClient: () => node.client('server'),
    }
    const app = await budgetedMarket({ mpp }, '0.01', tempoPayer(1).address, 0.02)
    return { ...app, node }
  }
  /** The buyer's mppx client (pull mode: the server broadcasts what it signed). */
  const mppClient = (node: ScriptedTempo, handle: typeof fetch) =>
    MppxClient.create({
      polyfill: false,
      fetch: handle,
      methods: [tempoClient.charge({ account: tempoPayer(2), getClient: () => node.client('client') })],
    })
  const broadcasts = (node: ScriptedTempo) =>
    node.calls.filter((call) => call.side === 'server' && call.method.startsWith('eth_sendRawTransaction'))
      .length

  test('attack: 6 racing paid orders against a budget of 2: exactly 2 paid and broadcast, 4 refused with nothing sent', async () => {
    const { node, handle, order, url, buyerKey, budget } = await mppMarket()
    const client = mppClient(node, handle as typeof fetch)
    // Six orders, not six tries of one: each with its own Idempotency-Key (the same body without keys, sent while
    // the first is being paid, would be taken as retries of it, as with x402).
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, index) =>
        client.fetch(url, post(order, { 'buyer-key': buyerKey, 'idempotency-key': `order-${index}` })),
      ),
    )
    const statuses = answers.map((answer) => answer.status).sort()
    expect(statuses).toEqual([201, 201, 403, 403, 403, 403])
    expect(broadcasts(node)).toBe(2)
    expect(await budget()).toMatchObject({ spent_today: 0.02, held_today: 0, remaining_today: 0 })
    // The day spent, the next order is refused before any challenge: the client has nothing to pay.
    const next = await client.fetch(url, post(order, { 'buyer-key': buyerKey }))
    expect(next.status).toBe(403)
    expect(((await next.json()) as { code: string }).code).toBe('budget_exceeded')
    expect(broadcasts(node)).toBe(2)
  })

  test('attack: a credential for an order naming the budgeted buyer without its key is refused before anything is sent', async () => {
    const { node, handle, order, url } = await mppMarket()
    const client = mppClient(node, handle as typeof fetch)
    const answer = await client.fetch(url, post(order))
    expect(answer.status).toBe(401)
    expect(((await answer.json()) as { code: string }).code).toBe('buyer_key_required')
    expect(broadcasts(node)).toBe(0)
  })
})

describe('budgets and x402 (official client, anvil)', () => {
  /** A budgeted market taking x402 on anvil: 0.5 USDC orders, 1 a day (two orders). */
  const x402Market = () => budgetedMarket(x402AppOptions(x402), '0.5', x402.seller.address, 1)

  test('attack: 5 racing x402 authorizations against a budget of 2 orders: the buyer pays exactly twice', async () => {
    const app = await x402Market()
    const before = await x402.anvil.usdcOf(x402.buyer.address)
    const offered = await app.handle(app.url, post(app.order, { 'buyer-key': app.buyerKey }))
    expect(offered.status).toBe(402)
    const required = decodePaymentRequiredHeader(offered.headers.get('payment-required') ?? '')
    const accepted = required.accepts[0] as PaymentRequirements
    const payloads = await Promise.all(
      Array.from({ length: 5 }, () => signedPayment(accepted, x402.buyer as unknown as LocalAccount)),
    )
    // Five orders, not five tries of one: each with its own Idempotency-Key (the same body without keys, sent while
    // the first is being paid, would be taken as retries of it).
    const answers = await Promise.all(
      payloads.map((payload, index) =>
        app.handle(
          app.url,
          post(app.order, {
            'buyer-key': app.buyerKey,
            'payment-signature': encodePaymentSignatureHeader(payload),
            'idempotency-key': `order-${index}`,
          }),
        ),
      ),
    )
    const statuses = answers.map((answer) => answer.status).sort()
    expect(statuses).toEqual([201, 201, 403, 403, 403])
    expect(before - (await x402.anvil.usdcOf(x402.buyer.address))).toBe(1_000_000n)
    expect(await app.budget()).toMatchObject({ spent_today: 1, remaining_today: 0 })
    // The official client, the day spent: refused before an offer, nothing signed or sent.
    const paying = wrapFetchWithPayment(app.handle as typeof fetch, x402Payer(x402.buyer))
    const refused = await paying(app.url, post(app.order, { 'buyer-key': app.buyerKey }))
    expect(refused.status).toBe(403)
    expect(before - (await x402.anvil.usdcOf(x402.buyer.address))).toBe(1_000_000n)
  })
})
