import { describe, expect, spyOn, test } from 'bun:test'
import {
  BASE_USDC,
  budgetTypedData,
  type ChainReader,
  type PaymentReceipt,
  payerProofTypedData,
  signedBudgetOf,
} from '@agentmarket/core'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import type { PaymentRequirements } from '@x402/core/types'
import { Mppx as MppxClient, tempo as tempoClient } from 'mppx/client'
import {
  type Address,
  encodeAbiParameters,
  encodeEventTopics,
  type Hex,
  keccak256,
  type LocalAccount,
  parseAbi,
  stringToHex,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { budgetDay } from '../../packages/core/src/Budget.ts'
import { type BudgetFields, signedBudget } from '../../packages/server/src/testing/budgets.ts'
import { PAYER, SELLER } from '../../packages/server/src/testing/chain.ts'
import {
  expectProblemShape,
  TEST_BASE_URL,
  type TestAppOptions,
  testApp,
} from '../../packages/server/src/testing/http.ts'
import { scriptedTempo, TEMPO_USDC_E, tempoPayer } from '../support/tempo.ts'
import { signedPayment, x402AppOptions, x402ChainForSuite } from '../support/x402.ts'

// Second round of attacks on spending budgets (commit 09dbafd): every path that orders, signs or reads a budget, driven
// through the in-process app (a scripted chain where a transfer must be judged, the real mppx client on a scripted
// Tempo node, the official x402 payload on anvil). Each test asserts the safe outcome, so a red test is an attack that
// works. The report of this file lists which ones are red and why.

const HOUR = 3_600_000
const DAY = 24 * HOUR
const owner = privateKeyToAccount(generatePrivateKey())
const SECRET = 'budget-helper-attack-secret-of-32-bytes!!'

type SkillPrice = number | string
type MarketOptions = TestAppOptions & {
  start?: string
  reportPrice?: SkillPrice
  notePrice?: SkillPrice
  sellerWallet?: Address
}

/**
 * A market with buyer-bot paired to `owner` (wallet-proven), and two sellers (`seller`, `other`) selling Report
 * (50 USDC by default), Note (20) and Hello (free), paid to `sellerWallet`.
 */
async function market(options: MarketOptions = {}) {
  const app = await testApp(options.start ?? '2026-06-01T12:00:00.000Z', options)
  const buyer = await app.register('buyer-bot', { bio: 'buys' })
  expect((await app.pair('owner', buyer.pairingCode, owner)).status).toBe(200)
  const keys: Record<string, string> = {}
  const skills = (report: SkillPrice) => [
    report === 'free'
      ? { name: 'Report', type: 'free' }
      : { name: 'Report', type: 'purchasable', price: report },
    { name: 'Note', type: 'purchasable', price: options.notePrice ?? 20 },
    { name: 'Hello', type: 'free' },
  ]
  for (const name of ['seller', 'other']) {
    const seller = await app.register(name, { bio: 'sells', skills: skills(options.reportPrice ?? 50) })
    const set = await app.call('PUT', `/api/agents/${name}`, {
      key: seller.key,
      body: { walletAddress: options.sellerWallet ?? SELLER },
    })
    expect(set.status).toBe(200)
    keys[name] = seller.key
  }
  const sellerKey = keys.seller ?? ''
  const otherKey = keys.other ?? ''
  const fields = (extra: Partial<BudgetFields> = {}): BudgetFields => ({
    agent: 'buyer-bot',
    perTaskMax: 50,
    perDayMax: 150,
    expiresAt: new Date(app.clock.now().getTime() + 30 * DAY),
    issuedAt: new Date(app.clock.now().getTime() - 1000),
    ...extra,
  })
  /** Sets the budget (the owner's signature by default), a moment after any budget set before. */
  const setBudget = async (extra: Partial<BudgetFields> = {}, wallet: LocalAccount = owner) => {
    app.clock.advance(2000)
    return app.call('PUT', '/api/agents/buyer-bot/budget', {
      body: await signedBudget(wallet, fields(extra), TEST_BASE_URL),
    })
  }
  /** An order on POST /api/agents/{seller}/tasks naming `buyer` (buyer-bot), with `key` as Bearer unless null. */
  const order = (
    skill = 'report',
    options: { seller?: string; key?: string | null; buyer?: string; headers?: Record<string, string> } = {},
  ) =>
    app.call('POST', `/api/agents/${options.seller ?? 'seller'}/tasks`, {
      body: { skill, buyer: options.buyer ?? 'buyer-bot' },
      headers: options.headers,
      ...(options.key !== null && { key: options.key ?? buyer.key }),
    })
  const budget = async () =>
    (await app.call('GET', '/api/agents/buyer-bot/budget', { key: buyer.key })).json as Record<
      string,
      unknown
    >
  /** Replaces a seller's skills (its key). */
  const reprice = (name: 'seller' | 'other', report: SkillPrice) =>
    app.call('PUT', `/api/agents/${name}`, { key: keys[name], body: { skills: skills(report) } })
  return { ...app, buyer, sellerKey, otherKey, fields, setBudget, order, budget, reprice }
}

type Market = Awaited<ReturnType<typeof market>>

/** The JSON POST init of `body` with extra headers. */
const post = (body: unknown, headers: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
})

/** The spending of buyer-bot on the UTC day holding `day`, as the store counts it at `now`. */
async function usageOn(app: Market, day: string, now: Date) {
  const { from, to } = budgetDay(new Date(day))
  return app.store.budgetUsage('buyer-bot', from, to, now)
}

describe('orders that name the budgeted buyer (HTTP, per-skill, A2A, MCP)', () => {
  test('attack: orders keyless, with another agent key, a wrong Buyer-Key or a lookalike buyer name cannot spend or hold the budget', async () => {
    // Should happen: 401/403 (or 400 for a name that is no agent name) on every path, nothing held; the buyer's own
    // orders, in any letter case of its name, are the only ones counted.
    const app = await market()
    expect((await app.setBudget()).status).toBe(200)
    expectProblemShape(await app.order('report', { key: null }), 401, 'buyer_key_required')
    expectProblemShape(await app.order('report', { key: app.sellerKey }), 403)
    expectProblemShape(await app.order('report', { key: app.sellerKey, buyer: 'BUYER-BOT' }), 403)
    expectProblemShape(
      await app.order('report', { key: null, headers: { 'buyer-key': `${app.buyer.key}x` } }),
      401,
    )
    // A Buyer-Key that names the seller's key wins over a Bearer that is the buyer's: the seller cannot hide behind it.
    expectProblemShape(await app.order('report', { headers: { 'buyer-key': app.sellerKey } }), 403)
    for (const lookalike of [
      'buyer-bot ',
      ' buyer-bot',
      'buyer\u2010bot',
      'buyer-bоt',
      'buyer-bot\n',
      'buyer-bot\u200b',
    ])
      expectProblemShape(await app.order('report', { key: null, buyer: lookalike }), 400, 'invalid_body')
    // The per-skill path (no payment methods here: a refusal comes before the 503).
    const perSkill = (headers: Record<string, string>) =>
      app.call('POST', '/api/agents/seller/tasks/report', { body: { buyer: 'Buyer-Bot' }, headers })
    expectProblemShape(await perSkill({}), 401, 'buyer_key_required')
    expectProblemShape(await perSkill({ 'buyer-key': app.otherKey }), 403)
    // A free skill still needs the key, and costs nothing with it.
    expectProblemShape(await app.order('hello', { key: null }), 401, 'buyer_key_required')
    expect((await app.order('hello')).status).toBe(201)
    expect(await app.budget()).toMatchObject({ held_today: 0, spent_today: 0, remaining_today: 150 })
    // The buyer itself, in capitals, is held to the same budget.
    expect((await app.order('report', { buyer: 'BUYER-BOT' })).status).toBe(201)
    expect(await app.budget()).toMatchObject({ held_today: 50, remaining_today: 100 })
  })

  test('attack: the per-skill path and /tasks share one day: the per-skill path refuses a full day before offering to be paid', async () => {
    // Should happen: 3 x 50 USDC held through /tasks fill 150; the per-skill path answers 403 budget_exceeded (not a
    // 402 or 503 that a client would try to pay), for Buyer-Key and for Bearer alike.
    const app = await market()
    await app.setBudget()
    for (let i = 0; i < 3; i++) expect((await app.order()).status).toBe(201)
    const ways: Record<string, string>[] = [
      { 'buyer-key': app.buyer.key },
      { authorization: `Bearer ${app.buyer.key}` },
    ]
    for (const headers of ways) {
      const refused = await app.call('POST', '/api/agents/other/tasks/note', {
        body: { buyer: 'buyer-bot' },
        headers,
      })
      expectProblemShape(refused, 403, 'budget_exceeded')
      expect(refused.json.budget).toMatchObject({ reason: 'per_day', remaining_today: 0 })
    }
  })

  test('attack: A2A SendMessage (JSON-RPC, REST, the marketplace interface) naming the budgeted buyer is held to its key and its day', async () => {
    // Should happen: without the buyer's Bearer key every binding refuses (buyer_key_required); with it, orders are
    // counted and the fourth 50-USDC order of a 150 day is refused (budget_exceeded).
    const app = await market()
    await app.setBudget()
    const message = (data: unknown) => ({
      message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ data }] },
    })
    const headers = (key?: string) => ({
      'a2a-version': '1.0',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    })
    const rpc = (path: string, data: unknown, key?: string) =>
      app.call('POST', path, {
        body: { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: message(data) },
        headers: headers(key),
      })
    const direct = { skill: 'report', buyer: 'buyer-bot' }
    const viaMarket = {
      skill: 'order-skill',
      params: { agent: 'seller', skill: 'report', buyer: 'BUYER-BOT' },
    }
    for (const [path, data, key] of [
      ['/a2a/agents/seller', direct, undefined],
      ['/a2a/agents/seller', direct, app.sellerKey],
      ['/a2a', viaMarket, undefined],
      ['/a2a', viaMarket, app.otherKey],
    ] as const) {
      const answer = await rpc(path, data, key)
      expect(answer.json.result, `${path} ${key ?? 'no key'}`).toBeUndefined()
      expect(String(answer.json.error?.message)).toMatch(/buyer_key_required|forbidden|unauthorized/i)
    }
    const rest = await app.call('POST', '/a2a/agents/seller/rest/message:send', {
      body: message(direct),
      headers: headers(),
    })
    expect(rest.status).toBeGreaterThanOrEqual(400)
    expect(rest.text).toContain('buyer_key_required')
    expect(await app.budget()).toMatchObject({ held_today: 0 })
    expect((await rpc('/a2a/agents/seller', direct, app.buyer.key)).json.result?.task).toBeDefined()
    expect((await rpc('/a2a', viaMarket, app.buyer.key)).json.result?.task).toBeDefined()
    const restPaid = await app.call('POST', '/a2a/agents/other/rest/message:send', {
      body: message(direct),
      headers: headers(app.buyer.key),
    })
    expect(restPaid.status).toBe(200)
    const fourth = await rpc('/a2a/agents/other', direct, app.buyer.key)
    expect(String(fourth.json.error?.message)).toContain('budget_exceeded')
    expect(await app.budget()).toMatchObject({ held_today: 150, remaining_today: 0 })
  })

  test('attack: MCP create_task with a seller key, or the buyer name in capitals, cannot spend the budget', async () => {
    // Should happen: the seller's MCP session is refused (forbidden), the buyer's session is counted under its day.
    const app = await market()
    await app.setBudget({ perDayMax: 60 })
    const connect = async (apiKey?: string) => {
      const client = new Client({ name: 'budget-attack', version: '1.0.0' })
      await client.connect(
        new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), {
          fetch: (input, init) => app.app.handle(new Request(input, init)),
          requestInit: apiKey ? { headers: { authorization: `Bearer ${apiKey}` } } : undefined,
        }),
      )
      return client
    }
    // biome-ignore lint/suspicious/noExplicitAny: the tool's JSON text, asserted on below
    const text = (result: any) => JSON.parse(result.content[0].text)
    const asSeller = await connect(app.sellerKey)
    const args = { agent: 'seller', skill: 'report', buyer: 'BUYER-BOT' }
    const refused = await asSeller.callTool({ name: 'create_task', arguments: args })
    expect(refused.isError).toBe(true)
    expect(text(refused).code).toBe('forbidden')
    const leaked = await asSeller.callTool({ name: 'get_budget', arguments: { agent: 'buyer-bot' } })
    expect(leaked.isError).toBe(true)
    expect(JSON.stringify(leaked)).not.toContain('per_day_max')
    const asBuyer = await connect(app.buyer.key)
    expect(text(await asBuyer.callTool({ name: 'create_task', arguments: args })).status).toBe(
      'pending_payment',
    )
    const over = await asBuyer.callTool({ name: 'create_task', arguments: { ...args, agent: 'other' } })
    expect(text(over)).toMatchObject({ code: 'budget_exceeded', budget: { remaining_today: 10 } })
  })

  test('attack: unpaid orders placed by strangers naming the agent before its owner set the budget do not lock the buyer out', async () => {
    // Should happen: orders the buyer never authorized (no key: it had no budget yet) are not the buyer's spending;
    // once the owner sets 150 a day, the buyer's own first 50-USDC order is accepted. (SECURITY.md: the key is there so
    // that nobody else can hold the buyer's day.)
    const app = await market()
    const stranger = await app.register('stranger')
    for (let i = 0; i < 3; i++) expect((await app.order('report', { key: stranger.key })).status).toBe(201)
    expect((await app.setBudget()).status).toBe(200)
    const own = await app.order()
    expect(own.status).toBe(201)
    expect(await app.budget()).toMatchObject({ held_today: 50, remaining_today: 100 })
  })

  test('attack: two concurrent retries with one Idempotency-Key when the day has room for one: both get the one order', async () => {
    // Should happen: the retry is answered with the first order (idempotency), never 403 budget_exceeded for an order
    // that was in fact stored; exactly one order is held.
    const app = await market()
    await app.setBudget({ perDayMax: 50 })
    const headers = { 'idempotency-key': 'retry-1' }
    const answers = await Promise.all([app.order('report', { headers }), app.order('report', { headers })])
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 201])
    expect(answers[0]?.json.task_id).toBe(answers[1]?.json.task_id)
    expect(await app.budget()).toMatchObject({ held_today: 50, remaining_today: 0 })
  })

  test('attack: an order created in the last instant of a full day is not checked against the next day', async () => {
    // Should happen: the order's budget day is the day it is stored under (its created_at): the full day refuses it,
    // so the day never holds more than per_day_max. Here the clock crosses midnight while the order is being checked
    // (between the task's creation time and the guard's reading of the clock), as it does for requests in flight at
    // 23:59:59.999.
    const app = await market()
    await app.setBudget({ perDayMax: 100 })
    expect((await app.order()).status).toBe(201)
    expect((await app.order()).status).toBe(201)
    expectProblemShape(await app.order(), 403, 'budget_exceeded')
    app.clock.set('2026-06-01T23:59:59.999Z')
    const kvGet = app.store.kvGet.bind(app.store)
    let crossed = false
    app.store.kvGet = async (key: string) => {
      if (key === 'budget:buyer-bot' && !crossed) {
        crossed = true
        app.clock.set('2026-06-02T00:00:00.001Z')
      }
      return kvGet(key)
    }
    const late = await app.order()
    app.store.kvGet = kvGet
    expect(crossed).toBe(true)
    const dayOne = await usageOn(app, '2026-06-01T12:00:00.000Z', new Date('2026-06-01T23:59:59.999Z'))
    expect(dayOne.spentBaseUnits + dayOne.heldBaseUnits).toBeLessThanOrEqual(100_000_000n)
    if (late.status === 201) {
      // Accepted: then it must count on the day it was checked against.
      expect(await app.budget()).toMatchObject({ day: '2026-06-02', held_today: 50 })
    }
  })

  test('attack: a seller changes prices after an order: the held amount stays the order price, free skills stay free', async () => {
    // Should happen: the hold is the price ordered (20), not the new one; the next order is checked at the new price
    // (per_task 50: a 60-USDC Report is refused per_task); a skill made free costs nothing but still needs the key.
    const app = await market()
    await app.setBudget({ perDayMax: 100 })
    expect((await app.order('note')).status).toBe(201)
    expect((await app.reprice('seller', 60)).status).toBe(200)
    expect(await app.budget()).toMatchObject({ held_today: 20, remaining_today: 80 })
    const over = await app.order('report')
    expectProblemShape(over, 403, 'budget_exceeded')
    expect(over.json.budget.reason).toBe('per_task')
    expect((await app.reprice('seller', 'free')).status).toBe(200)
    expectProblemShape(await app.order('report', { key: null }), 401, 'buyer_key_required')
    const free = await app.order('report')
    expect(free.status).toBe(201)
    expect(free.json.status).toBe('paid')
    expect(await app.budget()).toMatchObject({ held_today: 20, spent_today: 0, remaining_today: 80 })
  })
})

describe('signed budgets: replay, reorder, rounding, values, owner', () => {
  test('attack: a budget replayed, reordered within one second, re-timed by milliseconds or signed for another chain is refused', async () => {
    // Should happen: the same body again is 409; a body issued in the same second (other milliseconds) is 409; changing
    // the whole seconds breaks the signature (401); a signature under another chain id is 401; the tight budget stays.
    const app = await market()
    app.clock.set('2026-06-01T12:00:00.000Z')
    const at = (ms: number) => new Date(Date.parse('2026-06-01T12:00:00.000Z') + ms)
    const loose = await signedBudget(
      owner,
      app.fields({ perDayMax: 10_000, issuedAt: at(-59_900) }),
      TEST_BASE_URL,
    )
    const put = (body: unknown) => app.call('PUT', '/api/agents/buyer-bot/budget', { body })
    expect((await put(loose)).status).toBe(200)
    const tight = await signedBudget(
      owner,
      app.fields({ perDayMax: 10, issuedAt: at(-1_000) }),
      TEST_BASE_URL,
    )
    expect((await put(tight)).status).toBe(200)
    expectProblemShape(await put(loose), 409, 'budget_superseded')
    expectProblemShape(await put(tight), 409, 'budget_superseded')
    // The loose body with other milliseconds in its issue time: the signature still checks (whole seconds are signed),
    // and it is still older than the tight one.
    const remilled = { ...loose, budget: { ...loose.budget, issued_at: at(-59_001).toISOString() } }
    expectProblemShape(await put(remilled), 409, 'budget_superseded')
    // A looser budget issued in the tight one's second (other milliseconds) does not replace it either.
    const looseSameSecond = await signedBudget(
      owner,
      app.fields({ perDayMax: 10_000, issuedAt: at(-999) }),
      TEST_BASE_URL,
    )
    expectProblemShape(await put(looseSameSecond), 409, 'budget_superseded')
    const retimed = { ...loose, budget: { ...loose.budget, issued_at: at(0).toISOString() } }
    expectProblemShape(await put(retimed), 401, 'invalid_signature')
    const otherChain = await signedBudget(
      owner,
      app.fields({ perDayMax: 10_000, issuedAt: at(0) }),
      TEST_BASE_URL,
      1,
    )
    expectProblemShape(await put(otherChain), 401, 'invalid_signature')
    expect(await app.budget()).toMatchObject({ per_day_max: 10, issued_at: '2026-06-01T11:59:59.000Z' })
  })

  test('attack: issued_at just past the 5-minute skew, expires_at sub-second games and issued_at after expires_at are refused or rounded down', async () => {
    // Should happen: issued_at 5 min 1 s ahead is 400; at 4 min 59 s ahead it is accepted (skew) and rounds to whole
    // seconds; expires_at is kept rounded down (never later than signed); issued_at not before expires_at is 400.
    const app = await market()
    const now = app.clock.now().getTime()
    const ahead = await app.call('PUT', '/api/agents/buyer-bot/budget', {
      body: await signedBudget(
        owner,
        app.fields({ issuedAt: new Date(now + 5 * 60_000 + 1000) }),
        TEST_BASE_URL,
      ),
    })
    expectProblemShape(ahead, 400, 'invalid_body')
    expect(ahead.json.errors[0].pointer).toBe('/budget/issued_at')
    const expiresAt = new Date(now + DAY + 999)
    const set = await app.call('PUT', '/api/agents/buyer-bot/budget', {
      body: await signedBudget(
        owner,
        app.fields({ issuedAt: new Date(now + 299_500), expiresAt }),
        TEST_BASE_URL,
      ),
    })
    expect(set.status).toBe(200)
    expect(Date.parse(set.json.expires_at)).toBeLessThanOrEqual(expiresAt.getTime())
    expect(Date.parse(set.json.expires_at) % 1000).toBe(0)
    expect(Date.parse(set.json.issued_at) % 1000).toBe(0)
    const inverted = await app.call('PUT', '/api/agents/buyer-bot/budget', {
      body: await signedBudget(
        owner,
        app.fields({ issuedAt: new Date(now + 200_000), expiresAt: new Date(now + 100_000) }),
        TEST_BASE_URL,
      ),
    })
    expectProblemShape(inverted, 400, 'invalid_body')
    // Right after expiry (the rounded time) a paid order is refused as expired, a free one still needs the key.
    app.clock.set(new Date(Date.parse(set.json.expires_at)))
    const expired = await app.order()
    expectProblemShape(expired, 403, 'budget_exceeded')
    expect(expired.json.budget.reason).toBe('expired')
    expectProblemShape(await app.order('hello', { key: null }), 401, 'buyer_key_required')
  })

  test('attack: huge, negative, 7-decimal, exponent, hex and non-numeric amounts, and 101 sellers, are refused before any signature check', async () => {
    // Should happen: 400 invalid_body naming the field for each; 1,000,000 USDC a day (the largest price) is accepted
    // and signed as 10^12 base units; string amounts sign the same base units as numbers; 100 sellers are accepted.
    const app = await market()
    const base = await signedBudget(owner, app.fields(), TEST_BASE_URL)
    const put = (budget: Record<string, unknown>) =>
      app.call('PUT', '/api/agents/buyer-bot/budget', {
        body: { ...base, budget: { ...base.budget, ...budget } },
      })
    for (const bad of [
      { per_day_max: -1 },
      { per_day_max: 1_000_000.000001 },
      { per_day_max: 1_000_001 },
      { per_task_max: '12.1234567' },
      { per_task_max: 0.1 + 0.2 },
      { per_task_max: '1e3' },
      { per_task_max: 1e21 },
      { per_task_max: '0x10' },
      { per_task_max: ' 50' },
      { per_task_max: 'fifty' },
      { per_task_max: null },
      { per_task_max: true },
      { per_day_max: Number.NaN },
      { sellers: Array.from({ length: 101 }, (_, i) => `seller-${i}`) },
      { sellers: ['not a name'] },
      { sellers: 'seller' },
      { expires_at: 1_900_000_000 },
      { issued_at: '2026-06-01' },
      { extra: 1 },
    ]) {
      const answer = await put(bad)
      expectProblemShape(answer, 400, 'invalid_body')
    }
    expect(await app.call('GET', '/api/agents/buyer-bot/budget', { key: app.buyer.key })).toMatchObject({
      status: 404,
    })
    const huge = await app.setBudget({ perTaskMax: 1_000_000, perDayMax: 1_000_000 })
    expect(huge.status).toBe(200)
    expect(huge.json).toMatchObject({ per_task_max: 1_000_000, per_day_max: 1_000_000 })
    // The same budget with string amounts: same signed base units.
    const fields = app.fields({
      perTaskMax: 20,
      perDayMax: 40.5,
      issuedAt: new Date(app.clock.now().getTime() + 1000),
    })
    const signed = await signedBudget(owner, fields, TEST_BASE_URL)
    const asStrings = {
      ...signed,
      budget: { ...signed.budget, per_task_max: '20', per_day_max: '40.500000' },
    }
    const strings = await app.call('PUT', '/api/agents/buyer-bot/budget', { body: asStrings })
    expect(strings.status).toBe(200)
    expect(strings.json).toMatchObject({ per_task_max: 20, per_day_max: 40.5 })
    const many = Array.from({ length: 100 }, (_, i) => `s-${i}`)
    const sellers = await app.setBudget({
      sellers: [...many.slice(0, 99), 'OTHER'],
      issuedAt: new Date(app.clock.now().getTime() + 5000),
    })
    expect(sellers.status).toBe(200)
    expect((await app.order('note', { seller: 'other' })).status).toBe(201)
    const elsewhere = await app.order('note')
    expectProblemShape(elsewhere, 403, 'budget_exceeded')
    expect(elsewhere.json.budget.reason).toBe('seller')
  })

  test('attack: a signature over one value with another value on the wire (agent case, amounts, sellers order) is refused', async () => {
    // Should happen: the signed message is rebuilt from the wire body, so any difference is 401; the agent's name in
    // another case is the same agent and its own signature of that spelling is accepted.
    const app = await market()
    const body = await signedBudget(owner, app.fields({ sellers: ['seller', 'other'] }), TEST_BASE_URL)
    const put = (budget: Record<string, unknown>) =>
      app.call('PUT', '/api/agents/buyer-bot/budget', {
        body: { ...body, budget: { ...body.budget, ...budget } },
      })
    for (const tampered of [
      { agent: 'BUYER-BOT' },
      { per_task_max: 50.000001 },
      { sellers: ['other', 'seller'] },
      { sellers: ['seller'] },
      { sellers: [] },
    ])
      expectProblemShape(await put(tampered), 401, 'invalid_signature')
    const capitals = await app.setBudget({ agent: 'Buyer-Bot' })
    expect(capitals.status).toBe(200)
    // Signed for another agent of the same owner: refused for this one.
    const helper = await app.register('helper-bot')
    expect((await app.pair('owner', helper.pairingCode, owner)).status).toBe(200)
    const forHelper = await signedBudget(owner, app.fields({ agent: 'helper-bot' }), TEST_BASE_URL)
    expectProblemShape(
      await app.call('PUT', '/api/agents/buyer-bot/budget', { body: forHelper }),
      400,
      'invalid_body',
    )
    expect((await app.call('PUT', '/api/agents/helper-bot/budget', { body: forHelper })).status).toBe(200)
  })

  test('attack: the budgeted agent cannot change its owner to sign itself a looser budget', async () => {
    // Should happen: a paired agent gets no new pairing code (409 agent_already_paired); a budget signed by any other
    // wallet, even one proven by pairing another agent, is 401; the owner's budget stays.
    const app = await market()
    await app.setBudget({ perDayMax: 10 })
    const code = await app.call('POST', '/api/agents/buyer-bot/pairing-code', { key: app.buyer.key })
    expectProblemShape(code, 409, 'agent_already_paired')
    const mine = privateKeyToAccount(generatePrivateKey())
    const accomplice = await app.register('accomplice')
    expect((await app.pair('rogue', accomplice.pairingCode, mine)).status).toBe(200)
    expectProblemShape(await app.setBudget({ perDayMax: 1_000_000 }, mine), 401, 'invalid_signature')
    expect(await app.budget()).toMatchObject({ per_day_max: 10 })
  })
})

describe('what a budget tells those without the key', () => {
  test("attack: GET, PUT, 401 and 403 answers give a stranger no budget numbers and not the owner's wallet", async () => {
    // Should happen: GET without the key is 401, with another agent's key 403, neither with amounts; an order without
    // the key is 401 without a budget member; a PUT signed by a stranger is 401 and does not name the owner's wallet
    // (a user's wallet is not public: profiles show none, and proveOwner's errors do not name it).
    const app = await market()
    await app.setBudget({ perDayMax: 123.45 })
    const stranger = await app.register('stranger')
    const texts: string[] = []
    const noKey = await app.call('GET', '/api/agents/buyer-bot/budget')
    expectProblemShape(noKey, 401)
    texts.push(noKey.text)
    const otherKey = await app.call('GET', '/api/agents/buyer-bot/budget', { key: stranger.key })
    expectProblemShape(otherKey, 403)
    texts.push(otherKey.text)
    const order = await app.order('report', { key: null })
    expectProblemShape(order, 401, 'buyer_key_required')
    expect(order.json.budget).toBeUndefined()
    texts.push(order.text)
    const wrong = await app.order('report', { key: stranger.key })
    expect(wrong.json.budget).toBeUndefined()
    texts.push(wrong.text)
    for (const text of texts) {
      expect(text).not.toContain('123.45')
      expect(text).not.toContain('remaining')
    }
    const forged = await app.setBudget({ perDayMax: 1 }, privateKeyToAccount(generatePrivateKey()))
    expectProblemShape(forged, 401, 'invalid_signature')
    expect(forged.text.toLowerCase()).not.toContain(owner.address.toLowerCase())
    const profile = await app.call('GET', '/api/community/users/owner')
    expect(profile.text.toLowerCase()).not.toContain(owner.address.toLowerCase())
  })
})

// A chain whose receipts the test writes, by hash, with a head far enough ahead for the market's confirmations.
const TRANSFER = parseAbi(['event Transfer(address indexed from, address indexed to, uint256 value)'])

/** A mined USDC transfer of `amount` base units from `from` to `to` in `block`. */
function transferReceipt(
  hash: Hex,
  from: Address,
  to: Address,
  amount: bigint,
  block: bigint,
): PaymentReceipt {
  return {
    transactionHash: hash,
    blockNumber: block,
    status: 'success',
    from,
    to: BASE_USDC,
    input: null,
    logs: [
      {
        address: BASE_USDC,
        topics: encodeEventTopics({ abi: TRANSFER, eventName: 'Transfer', args: { from, to } }) as Hex[],
        data: encodeAbiParameters([{ type: 'uint256' }], [amount]),
        logIndex: 0,
      },
    ],
  }
}

/** The chain: `mine` adds a transfer; `reads` counts receipt reads. */
function writtenChain() {
  const receipts = new Map<string, PaymentReceipt>()
  let reads = 0
  const chain: ChainReader = {
    headBlock: async () => 200n,
    receipts: async (hashes) => {
      reads += 1
      return hashes.map((hash) => receipts.get(hash.toLowerCase()) ?? null)
    },
  }
  let n = 0
  const mine = (from: Address, to: Address, amount: bigint, block: bigint): Hex => {
    n += 1
    const hash = keccak256(stringToHex(`transfer-${n}`))
    receipts.set(hash, transferReceipt(hash, from, to, amount, block))
    return hash
  }
  return { chain, mine, reads: () => reads }
}

describe('budgets and payments judged on chain (written receipts)', () => {
  /** A market on the written chain: Report 1.5 USDC to SELLER, a budget of 2 per task, 3 a day. */
  async function chainMarket() {
    const written = writtenChain()
    const app = await market({ chain: written.chain, reportPrice: 1.5, notePrice: 0.5 })
    expect((await app.setBudget({ perTaskMax: 2, perDayMax: 3 })).status).toBe(200)
    /** Verifies `txHash` for task `id` (PAYER's signature of the task's payer proof). */
    const verify = async (id: string, txHash: Hex) => {
      const proof = payerProofTypedData(8453, { market: TEST_BASE_URL, agent: 'seller', task: id, txHash })
      const payerSignature = await PAYER.signTypedData({ ...proof, message: { ...proof.message, txHash } })
      return app.call('POST', `/api/agents/seller/tasks/${id}/verify-payment`, {
        body: { tx_hash: txHash, payer_signature: payerSignature },
      })
    }
    const refund = (id: string, txHash: Hex) =>
      app.call('POST', `/api/agents/seller/tasks/${id}/refund`, {
        key: app.sellerKey,
        body: { tx_hash: txHash, reason: 'excess' },
      })
    return { ...app, ...written, verify, refund }
  }

  test('attack: an order sent with tx_hash past the day or the per-task maximum is refused and stores nothing (per-task before the chain is read)', async () => {
    // Should happen: a per-task refusal reads no receipt; a paid-at-order order that would pass the day is 403 and
    // nothing is stored under its hash; within the day it is accepted and spent.
    const app = await chainMarket()
    expect((await app.order('report')).status).toBe(201) // holds 1.5
    const reads = app.reads()
    expect((await app.reprice('other', 2.5)).status).toBe(200)
    const big = app.mine(PAYER.address, SELLER, 2_500_000n, 100n)
    const signFor = (agent: string, txHash: Hex) => {
      const proof = payerProofTypedData(8453, { market: TEST_BASE_URL, agent, task: '', txHash })
      return PAYER.signTypedData({ ...proof, message: { ...proof.message, txHash } })
    }
    const perTask = await app.call('POST', '/api/agents/other/tasks', {
      key: app.buyer.key,
      body: {
        skill: 'report',
        buyer: 'buyer-bot',
        tx_hash: big,
        payer_signature: await signFor('other', big),
      },
    })
    expectProblemShape(perTask, 403, 'budget_exceeded')
    expect(perTask.json.budget.reason).toBe('per_task')
    expect(app.reads()).toBe(reads)
    const paid = app.mine(PAYER.address, SELLER, 1_500_000n, 101n)
    const within = await app.call('POST', '/api/agents/seller/tasks', {
      key: app.buyer.key,
      body: {
        skill: 'report',
        buyer: 'buyer-bot',
        tx_hash: paid,
        payer_signature: await signFor('seller', paid),
      },
    })
    expect(within.status).toBe(201)
    expect(await app.budget()).toMatchObject({ held_today: 1.5, spent_today: 1.5, remaining_today: 0 })
    const note = app.mine(PAYER.address, SELLER, 500_000n, 102n)
    const overDay = await app.call('POST', '/api/agents/seller/tasks', {
      key: app.buyer.key,
      body: {
        skill: 'note',
        buyer: 'buyer-bot',
        tx_hash: note,
        payer_signature: await signFor('seller', note),
      },
    })
    expectProblemShape(overDay, 403, 'budget_exceeded')
    expect(overDay.json.budget).toMatchObject({ reason: 'per_day', remaining_today: 0 })
    expect(await app.store.findTaskIdByTxHash(note)).toBeNull()
    expect(await app.budget()).toMatchObject({ held_today: 1.5, spent_today: 1.5 })
  })

  test('attack: a held order paid twice, or verified after it expired, spends once or not at all', async () => {
    // Should happen: a second hash for a paid order is refused (409), the day counts 1.5 once; an order verified after
    // its expiry is refused and its day spends nothing.
    const app = await chainMarket()
    const id = (await app.order('report')).json.task_id as string
    expect((await app.verify(id, app.mine(PAYER.address, SELLER, 1_500_000n, 100n))).status).toBe(200)
    const again = await app.verify(id, app.mine(PAYER.address, SELLER, 1_500_000n, 101n))
    expectProblemShape(again, 409, 'task_not_pending')
    expect(await app.budget()).toMatchObject({ spent_today: 1.5, held_today: 0, remaining_today: 1.5 })
    const late = (await app.order('report')).json.task_id as string
    const intime = app.mine(PAYER.address, SELLER, 1_500_000n, 102n)
    app.clock.advance(DAY + HOUR)
    expectProblemShape(await app.verify(late, intime), 409, 'task_expired')
    const dayOne = await usageOn(app, '2026-06-01T12:00:00.000Z', app.clock.now())
    expect(dayOne).toEqual({ spentBaseUnits: 1_500_000n, heldBaseUnits: 0n })
  })

  test('attack: a refund larger than the price never makes spending negative', async () => {
    // Should happen: a 5 USDC refund of a 1.5 order brings that order's spending to 0, not -3.5: the day still has 3.
    const app = await chainMarket()
    const id = (await app.order('report')).json.task_id as string
    expect((await app.verify(id, app.mine(PAYER.address, SELLER, 1_500_000n, 100n))).status).toBe(200)
    const back = await app.refund(id, app.mine(SELLER, PAYER.address, 5_000_000n, 110n))
    expect(back.status).toBe(200)
    expect(await app.budget()).toMatchObject({ spent_today: 0, remaining_today: 3 })
    expect((await app.order('report')).status).toBe(201)
    expect((await app.order('report')).status).toBe(201)
    expectProblemShape(await app.order('note'), 403, 'budget_exceeded')
  })

  test('attack: an order overpaid 100 USDC (per-task max 2) and the excess refunded: the day counts the 1.5 that stayed with the seller', async () => {
    // Should happen: what the buyer's money paid, less what came back, is what the order spent: 100 - 98.5 = 1.5, so
    // 1.5 of the day's 3 remains. (The day counts "price less refunds", 1.5 - 98.5 -> 0, so an agent and a willing
    // seller can repeat the round without end and the budget always shows nothing spent.)
    const app = await chainMarket()
    const id = (await app.order('report')).json.task_id as string
    expect((await app.verify(id, app.mine(PAYER.address, SELLER, 100_000_000n, 100n))).status).toBe(200)
    expect((await app.refund(id, app.mine(SELLER, PAYER.address, 98_500_000n, 110n))).status).toBe(200)
    expect(await app.budget()).toMatchObject({ spent_today: 1.5, remaining_today: 1.5 })
  })

  test('attack: a 1.5 USDC order overpaid with 100 USDC under a per-task maximum of 2 is refused, or counted at what it took', async () => {
    // Should happen (policy): either the verification refuses a payment above the budget (per-task maximum), or the
    // day counts the 100 USDC the order took; it must not show 1.5 spent and 1.5 remaining.
    const app = await chainMarket()
    const id = (await app.order('report')).json.task_id as string
    const verified = await app.verify(id, app.mine(PAYER.address, SELLER, 100_000_000n, 100n))
    if (verified.status === 200)
      expect(await app.budget()).toMatchObject({ spent_today: 100, remaining_today: 0 })
    else expect(verified.status).toBe(403)
  })
})

describe('budgets and machine payments (MPP, real mppx client, scripted Tempo)', () => {
  /** A budgeted market taking MPP: Report 0.01 USDC.e, a budget of 0.01 per task and 0.02 a day. */
  async function mppMarket() {
    const node = scriptedTempo()
    const mpp = {
      secretKey: SECRET,
      realm: 'localhost',
      currency: TEMPO_USDC_E,
      getClient: () => node.client('server'),
    }
    const app = await market({
      mpp,
      reportPrice: '0.01',
      notePrice: '0.005',
      sellerWallet: tempoPayer(1).address,
    })
    expect((await app.setBudget({ perTaskMax: 0.01, perDayMax: 0.02 })).status).toBe(200)
    const handle = (input: RequestInfo | URL, init?: RequestInit) => app.app.handle(new Request(input, init))
    const client = MppxClient.create({
      polyfill: false,
      fetch: handle as typeof fetch,
      methods: [tempoClient.charge({ account: tempoPayer(2), getClient: () => node.client('client') })],
    })
    const url = 'http://localhost/api/agents/seller/tasks/report'
    const body = { buyer: 'buyer-bot' }
    const withKey = { 'buyer-key': app.buyer.key }
    const broadcasts = () =>
      node.calls.filter((call) => call.side === 'server' && call.method.startsWith('eth_sendRawTransaction'))
        .length
    /** A credential for the 402 challenge of one order (nothing sent yet). */
    const credential = async () => {
      const challenge = await handle(url, post(body, withKey))
      expect(challenge.status).toBe(402)
      return client.createCredential(challenge)
    }
    return { ...app, node, handle, client, url, body, withKey, broadcasts, credential }
  }

  test('attack: the budget tightened between the challenge and the credential: 403 and nothing broadcast', async () => {
    // Should happen: the credential for 0.01 meets a budget of 0.005 per task: 403 budget_exceeded (per_task), the
    // signed transaction is never broadcast, nothing is held.
    const app = await mppMarket()
    const paying = await app.credential()
    expect((await app.setBudget({ perTaskMax: 0.005, perDayMax: 0.02 })).status).toBe(200)
    const answer = await app.handle(app.url, post(app.body, { ...app.withKey, authorization: paying }))
    expect(answer.status).toBe(403)
    expect(((await answer.json()) as { code: string }).code).toBe('budget_exceeded')
    expect(app.broadcasts()).toBe(0)
    expect(await app.budget()).toMatchObject({ held_today: 0, spent_today: 0 })
  })

  test('attack: the seller raises the price past the per-task maximum between the challenge and the credential: 403, nothing broadcast', async () => {
    // Should happen: the credential is judged against the stored price (0.02 > 0.01 per task): 403 per_task, no money.
    const app = await mppMarket()
    const paying = await app.credential()
    expect((await app.reprice('seller', '0.02')).status).toBe(200)
    const answer = await app.handle(app.url, post(app.body, { ...app.withKey, authorization: paying }))
    expect(answer.status).toBe(403)
    expect(((await answer.json()) as { budget: { reason: string } }).budget.reason).toBe('per_task')
    expect(app.broadcasts()).toBe(0)
  })

  test('attack: a payment whose broadcast answer was lost, found on the chain and retried with its credential, counts once', async () => {
    // Should happen: the first try holds 0.01, its broadcast answer fails (mined anyway) and the market reads the
    // transfer from the chain (201, issue 39); a retry of the credential gets that task; the day then shows 0.01 spent
    // and nothing held (the payment is that hold), so the buyer's second 0.01 order is accepted.
    const app = await mppMarket()
    const consoleError = spyOn(console, 'error').mockImplementation(() => {})
    try {
      const paying = await app.credential()
      app.node.failNextBroadcast()
      const first = await app.handle(app.url, post(app.body, { ...app.withKey, authorization: paying }))
      expect(first.status).toBe(201)
      const retried = await app.handle(app.url, post(app.body, { ...app.withKey, authorization: paying }))
      expect(retried.status).toBe(200)
      expect(app.broadcasts()).toBe(1)
      expect(await app.budget()).toMatchObject({ spent_today: 0.01, held_today: 0, remaining_today: 0.01 })
      const second = await app.client.fetch(app.url, post(app.body, app.withKey))
      expect(second.status).toBe(201)
    } finally {
      consoleError.mockRestore()
    }
  })
})

describe('budgets and x402 (anvil)', () => {
  const x402 = x402ChainForSuite()

  test('attack: an x402 authorization refused for the key, a raised price or a seller outside the budget moves no USDC and stays usable', async () => {
    // Should happen: without Buyer-Key 401; after the seller raises the price past the per-task maximum 403 per_task;
    // under a budget naming only another seller 403 seller; none of these moves the buyer's USDC or uses the
    // authorization, which pays the order once the budget allows it again (0.5 USDC leaves the buyer, once).
    const app = await market({
      ...x402AppOptions(x402),
      reportPrice: '0.5',
      sellerWallet: x402.seller.address,
    })
    expect((await app.setBudget({ perTaskMax: 1, perDayMax: 1 })).status).toBe(200)
    const handle = (input: RequestInfo | URL, init?: RequestInit) => app.app.handle(new Request(input, init))
    const url = 'http://localhost/api/agents/seller/tasks/report'
    const body = { buyer: 'buyer-bot' }
    const before = await x402.anvil.usdcOf(x402.buyer.address)
    const offered = await handle(url, post(body, { 'buyer-key': app.buyer.key }))
    expect(offered.status).toBe(402)
    const required = decodePaymentRequiredHeader(offered.headers.get('payment-required') ?? '')
    const payload = await signedPayment(
      required.accepts[0] as PaymentRequirements,
      x402.buyer as unknown as LocalAccount,
    )
    const signature = encodePaymentSignatureHeader(payload)
    const pay = (headers: Record<string, string>) =>
      handle(url, post(body, { 'payment-signature': signature, ...headers }))
    expect((await pay({})).status).toBe(401)
    expect((await app.reprice('seller', '2')).status).toBe(200)
    const raised = await pay({ 'buyer-key': app.buyer.key })
    expect(raised.status).toBe(403)
    expect(((await raised.json()) as { budget: { reason: string } }).budget.reason).toBe('per_task')
    expect((await app.reprice('seller', '0.5')).status).toBe(200)
    expect((await app.setBudget({ perTaskMax: 1, perDayMax: 1, sellers: ['other'] })).status).toBe(200)
    const elsewhere = await pay({ 'buyer-key': app.buyer.key })
    expect(elsewhere.status).toBe(403)
    expect(((await elsewhere.json()) as { budget: { reason: string } }).budget.reason).toBe('seller')
    expect(await x402.anvil.usdcOf(x402.buyer.address)).toBe(before)
    expect(await app.budget()).toMatchObject({ held_today: 0, spent_today: 0 })
    expect((await app.setBudget({ perTaskMax: 1, perDayMax: 1 })).status).toBe(200)
    const paid = await pay({ 'buyer-key': app.buyer.key })
    expect(paid.status).toBe(201)
    expect(before - (await x402.anvil.usdcOf(x402.buyer.address))).toBe(500_000n)
    expect(await app.budget()).toMatchObject({ spent_today: 0.5, held_today: 0, remaining_today: 0.5 })
    expect((await pay({ 'buyer-key': app.buyer.key })).status).toBe(409)
    expect(before - (await x402.anvil.usdcOf(x402.buyer.address))).toBe(500_000n)
  })
})

// The documented signing recipe, by hand (not through the test helper), against the server's check.
test('attack: a budget signed by hand as docs/budgets.md shows (viem signTypedData, string amounts) is the one the server checks', async () => {
  // Should happen: the documented recipe is accepted; the same signature with per_day_max raised by one base unit is 401.
  const app = await market()
  const issued = new Date(app.clock.now().getTime() - 1000)
  const expires = new Date(app.clock.now().getTime() + DAY)
  const budget = {
    agent: 'buyer-bot',
    per_task_max: 50,
    per_day_max: 150,
    sellers: [] as string[],
    expires_at: expires.toISOString(),
    issued_at: issued.toISOString(),
  }
  const signature = await owner.signTypedData(
    budgetTypedData(
      8453,
      signedBudgetOf(TEST_BASE_URL, {
        ...budget,
        per_task_max: 50_000_000n,
        per_day_max: 150_000_000n,
        expires_at: expires,
        issued_at: issued,
      }),
    ),
  )
  const raised = await app.call('PUT', '/api/agents/buyer-bot/budget', {
    body: { budget: { ...budget, per_day_max: 150.000001 }, signature },
  })
  expectProblemShape(raised, 401, 'invalid_signature')
  expect(
    (await app.call('PUT', '/api/agents/buyer-bot/budget', { body: { budget, signature } })).status,
  ).toBe(200)
})
