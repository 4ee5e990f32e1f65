import { describe, expect, test } from 'bun:test'
import { jobSteps, type TaskPayment } from '@agentmarket/core'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { keccak256, stringToHex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { type BudgetFields, signedBudget } from '../testing/budgets.ts'
import { expectProblemShape, TEST_BASE_URL, testApp } from '../testing/http.ts'

const ownerWallet = privateKeyToAccount(generatePrivateKey())
const sellerWallet = privateKeyToAccount(generatePrivateKey())
const payer = privateKeyToAccount(generatePrivateKey())
const HOUR = 3600 * 1000

/** A market with a buyer agent paired to a wallet-proven owner, two sellers (50 and 20 USDC skills, one free). */
async function market() {
  const app = await testApp('2026-06-01T12:00:00.000Z')
  const buyer = await app.register('buyer-bot', { bio: 'buys' })
  expect((await app.pair('owner', buyer.pairingCode, ownerWallet)).status).toBe(200)
  for (const name of ['seller', 'other']) {
    const seller = await app.register(name, {
      bio: 'sells',
      skills: [
        { name: 'Report', type: 'purchasable', price: 50 },
        { name: 'Note', type: 'purchasable', price: 20 },
        { name: 'Hello', type: 'free' },
      ],
    })
    await app.call('PUT', `/api/agents/${name}`, {
      key: seller.key,
      body: { walletAddress: sellerWallet.address },
    })
  }
  const fields = (extra: Partial<BudgetFields> = {}): BudgetFields => ({
    agent: 'buyer-bot',
    perTaskMax: 50,
    perDayMax: 150,
    expiresAt: new Date(app.clock.now().getTime() + 30 * 24 * HOUR),
    issuedAt: new Date(app.clock.now().getTime() - 1000),
    ...extra,
  })
  /** Sets the budget (signed by `wallet`, the owner's by default); the answer. */
  const setBudget = async (extra: Partial<BudgetFields> = {}, wallet = ownerWallet, market = TEST_BASE_URL) =>
    app.call('PUT', '/api/agents/buyer-bot/budget', {
      body: await signedBudget(wallet, fields(extra), market),
    })
  /** An order of `skill` from `seller` naming buyer-bot, with its key unless `key` is null. */
  const order = (skill = 'report', seller = 'seller', key: string | null = buyer.key) =>
    app.call('POST', `/api/agents/${seller}/tasks`, {
      body: { skill, buyer: 'buyer-bot' },
      ...(key !== null && { key }),
    })
  const budget = () => app.call('GET', '/api/agents/buyer-bot/budget', { key: buyer.key })
  return { ...app, buyer, setBudget, order, budget, fields }
}

/** A transfer payment of `amount` base units for `id`, as a verified payment records it. */
function payment(id: string, amount: bigint, at: Date): TaskPayment {
  return {
    method: 'transfer',
    txHash: keccak256(stringToHex(id)),
    escrowTaskId: null,
    amountBaseUnits: amount,
    from: payer.address,
    at,
  }
}

describe('spending budgets', () => {
  test('behavior: the owner signs a budget; orders naming the buyer hold its price; past the day it is 403 budget_exceeded with what remains', async () => {
    const { setBudget, order, budget } = await market()
    const set = await setBudget()
    expect(set.status).toBe(200)
    expect(set.json).toMatchObject({
      agent: 'buyer-bot',
      per_task_max: 50,
      per_day_max: 150,
      sellers: [],
      signer: ownerWallet.address,
      active: true,
      day: '2026-06-01',
      spent_today: 0,
      held_today: 0,
      remaining_today: 150,
      resets_at: '2026-06-02T00:00:00.000Z',
    })
    for (let i = 0; i < 3; i++) expect((await order()).status).toBe(201)
    expect((await budget()).json).toMatchObject({ held_today: 150, remaining_today: 0 })
    const refused = await order('note')
    expectProblemShape(refused, 403, 'budget_exceeded')
    expect(refused.json.budget).toEqual({
      reason: 'per_day',
      per_task_max: 50,
      per_day_max: 150,
      remaining_today: 0,
      resets_at: '2026-06-02T00:00:00.000Z',
      expires_at: expect.any(String),
    })
    // A free skill spends nothing.
    expect((await order('hello')).status).toBe(201)
  })

  test("behavior: an order naming a budgeted buyer must carry its key; another agent's key is refused", async () => {
    const { setBudget, order, register } = await market()
    // Before a budget, the buyer is a plain label (SPEC).
    expect((await order('report', 'seller', null)).status).toBe(201)
    await setBudget()
    expectProblemShape(await order('report', 'seller', null), 401, 'buyer_key_required')
    const stranger = await register('stranger')
    expectProblemShape(await order('report', 'seller', stranger.key), 403, 'forbidden')
    expectProblemShape(await order('report', 'seller', 'amk_wrong'), 401)
  })

  test('behavior: per-task maximum, sellers and expiry each refuse with their reason', async () => {
    const { setBudget, order, clock } = await market()
    await setBudget({ perTaskMax: 20, sellers: ['other'] })
    const over = await order('report', 'other')
    expectProblemShape(over, 403, 'budget_exceeded')
    expect(over.json.budget.reason).toBe('per_task')
    const elsewhere = await order('note', 'seller')
    expect(elsewhere.json.budget.reason).toBe('seller')
    expect((await order('note', 'other')).status).toBe(201)
    clock.advance(31 * 24 * HOUR)
    const expired = await order('note', 'other')
    expect(expired.json.budget.reason).toBe('expired')
  })

  test('behavior: a hold returns when the order expires unpaid; a payment spends it; a refund gives it back; a new day starts afresh', async () => {
    const { setBudget, order, budget, store, clock } = await market()
    await setBudget({ perDayMax: 100 })
    const first = (await order()).json.task_id
    const second = (await order()).json.task_id
    expect((await budget()).json).toMatchObject({ held_today: 100, remaining_today: 0 })
    expect(await store.markTaskPaid(first, payment(first, 50_000_000n, clock.now()), [])).toBe('paid')
    expect((await budget()).json).toMatchObject({ spent_today: 50, held_today: 50, remaining_today: 0 })
    const paid = await store.getTask('seller', first)
    if (!paid) throw new Error('no task')
    const refund = {
      kind: 'refund' as const,
      by: 'seller' as const,
      wallet: sellerWallet.address,
      at: clock.now(),
      amountBaseUnits: 20_000_000n,
      reason: 'partly',
      txHash: null,
    }
    expect(await store.changeTask(jobSteps.refund(paid, refund))).toBe(true)
    expect((await budget()).json).toMatchObject({ spent_today: 30, held_today: 50, remaining_today: 20 })
    expect((await order('note')).status).toBe(201)
    // The unpaid second order expires after a day (the next day: the budget day is the order's).
    clock.advance(11 * HOUR)
    expect((await budget()).json).toMatchObject({ day: '2026-06-01', held_today: 70, remaining_today: 0 })
    clock.advance(2 * HOUR)
    expect((await budget()).json).toMatchObject({
      day: '2026-06-02',
      spent_today: 0,
      held_today: 0,
      remaining_today: 100,
    })
    expect(second).toMatch(/^task_/)
  })

  test('attack: a budget signed by another wallet, for another market, or with other values is refused; an older budget is never taken back', async () => {
    const { setBudget, call, fields, clock } = await market()
    const stranger = privateKeyToAccount(generatePrivateKey())
    expectProblemShape(await setBudget({}, stranger), 401, 'invalid_signature')
    expectProblemShape(await setBudget({}, ownerWallet, 'https://other.example'), 401, 'invalid_signature')
    const body = await signedBudget(ownerWallet, fields(), TEST_BASE_URL)
    const raised = { ...body, budget: { ...body.budget, per_day_max: 1_000_000 } }
    expectProblemShape(
      await call('PUT', '/api/agents/buyer-bot/budget', { body: raised }),
      401,
      'invalid_signature',
    )
    const loose = await signedBudget(ownerWallet, fields({ perDayMax: 10_000 }), TEST_BASE_URL)
    expect((await call('PUT', '/api/agents/buyer-bot/budget', { body: loose })).status).toBe(200)
    const tight = await setBudget({ perDayMax: 10, issuedAt: clock.now() })
    expect(tight.json.per_day_max).toBe(10)
    const replayed = await call('PUT', '/api/agents/buyer-bot/budget', { body: loose })
    expectProblemShape(replayed, 409, 'budget_superseded')
  })

  test('attack: a budget for another agent, with impossible times, or for an agent without a proven owner is refused', async () => {
    const { setBudget, call, register, fields, clock } = await market()
    const other = await signedBudget(ownerWallet, fields({ agent: 'seller' }), TEST_BASE_URL)
    expectProblemShape(
      await call('PUT', '/api/agents/buyer-bot/budget', { body: other }),
      400,
      'invalid_body',
    )
    expectProblemShape(
      await call('PUT', '/api/agents/seller/budget', { body: other }),
      409,
      'no_proven_owner',
    )
    const past = await setBudget({ expiresAt: new Date(clock.now().getTime() - 1000) })
    expectProblemShape(past, 400, 'invalid_body')
    expect(past.json.errors[0].pointer).toBe('/budget/expires_at')
    const future = await setBudget({ issuedAt: new Date(clock.now().getTime() + 3_600_000) })
    expect(future.json.errors[0].pointer).toBe('/budget/issued_at')
    const unpaired = await register('lonely')
    expect((await call('GET', '/api/agents/lonely/budget', { key: unpaired.key })).json.code).toBe(
      'budget_not_found',
    )
    const bad = await call('PUT', '/api/agents/buyer-bot/budget', {
      body: { budget: { agent: 'buyer-bot', per_task_max: -1 }, signature: '0x00' },
    })
    expectProblemShape(bad, 400, 'invalid_body')
  })

  test("behavior: the owner reads the budget with its wallet's proof; a stranger's wallet is refused", async () => {
    const { setBudget, order, call, signedProof } = await market()
    await setBudget()
    expect((await order()).status).toBe(201)
    const path = '/api/agents/buyer-bot/budget'
    const asOwner = await call('GET', path, {
      headers: { 'x-wallet-address': ownerWallet.address, ...(await signedProof(ownerWallet, 'GET', path)) },
    })
    expect(asOwner.status).toBe(200)
    expect(asOwner.json).toMatchObject({ held_today: 50, remaining_today: 100 })
    const stranger = privateKeyToAccount(generatePrivateKey())
    const refused = await call('GET', path, {
      headers: { 'x-wallet-address': stranger.address, ...(await signedProof(stranger, 'GET', path)) },
    })
    expect([401, 403]).toContain(refused.status)
    expect(refused.json.budget).toBeUndefined()
    expectProblemShape(await call('GET', path), 401)
  })

  test('attack: 100 concurrent 50-USDC orders against a 150-per-day budget: exactly 3 accepted', async () => {
    const { setBudget, order, budget } = await market()
    await setBudget()
    const answers = await Promise.all(Array.from({ length: 100 }, () => order()))
    const statuses = answers.map((answer) => answer.status)
    expect(statuses.filter((status) => status === 201)).toHaveLength(3)
    expect(statuses.filter((status) => status === 403)).toHaveLength(97)
    expect((await budget()).json).toMatchObject({ held_today: 150, remaining_today: 0 })
  })

  test('behavior: over MCP the owner sets the budget (set_budget), the agent reads it (get_budget) and its orders carry its key (create_task)', async () => {
    const app = await market()
    const connect = async (apiKey?: string) => {
      const client = new Client({ name: 'budget-test', version: '1.0.0' })
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
    const anonymous = await connect()
    const body = await signedBudget(ownerWallet, app.fields({ perDayMax: 60 }), TEST_BASE_URL)
    const set = await anonymous.callTool({ name: 'set_budget', arguments: { agent: 'buyer-bot', ...body } })
    expect(text(set)).toMatchObject({ per_day_max: 60, remaining_today: 60 })
    const asBuyer = await connect(app.buyer.key)
    const args = { agent: 'seller', skill: 'report', buyer: 'buyer-bot' }
    const refusedAnonymous = await anonymous.callTool({ name: 'create_task', arguments: args })
    expect(refusedAnonymous.isError).toBe(true)
    expect(text(refusedAnonymous).code).toBe('buyer_key_required')
    expect(text(await asBuyer.callTool({ name: 'create_task', arguments: args })).status).toBe(
      'pending_payment',
    )
    const second = await asBuyer.callTool({ name: 'create_task', arguments: args })
    expect(text(second)).toMatchObject({ code: 'budget_exceeded', budget: { remaining_today: 10 } })
    const read = await asBuyer.callTool({ name: 'get_budget', arguments: { agent: 'buyer-bot' } })
    expect(text(read)).toMatchObject({ held_today: 50, remaining_today: 10 })
  })
})
