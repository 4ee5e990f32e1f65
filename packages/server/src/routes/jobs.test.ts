import { describe, expect, test } from 'bun:test'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { expectProblemShape, testApp } from '../testing/http.ts'

const buyer = privateKeyToAccount(generatePrivateKey())
const stranger = privateKeyToAccount(generatePrivateKey())
const sellerWallet = privateKeyToAccount(generatePrivateKey())

const SKILLS = [
  { name: 'Reviewed', type: 'free', sla: 'ten minutes', sla_seconds: 600, review_seconds: 3600 },
  { name: 'Quick', type: 'free', sla: 'a minute', sla_seconds: 60 },
  { name: 'Plain', type: 'free' },
]

/** A market with a seller of three free skills, and an order of `skill` placed by the buyer's wallet. */
async function ordered(skill = 'reviewed', buyerWallet: string | null = buyer.address) {
  const app = await testApp()
  const seller = await app.register('seller', { skills: SKILLS })
  await app.call('PUT', '/api/agents/seller', {
    key: seller.key,
    body: { walletAddress: sellerWallet.address },
  })
  const created = await app.call('POST', '/api/agents/seller/tasks', {
    body: { skill, ...(buyerWallet && { buyer_wallet: buyerWallet }) },
  })
  expect(created.status).toBe(201)
  const path = `/api/agents/seller/tasks/${created.json.task_id}`
  const deliver = (url = 'https://example.com/result') =>
    app.call('POST', `${path}/complete`, { key: seller.key, body: { result_url: url } })
  const read = async () => (await app.call('GET', path)).json
  // The review typed data as the delivered task showed it (it is gone once decided).
  let shown: Awaited<ReturnType<typeof read>>['review'] = null
  /** The review the task asks for, signed by `wallet` with `decision` and `reason`. */
  const sign = async (
    wallet: typeof buyer,
    decision: 'accept' | 'reject',
    reason = '',
    task = created.json.task_id,
  ) => {
    shown ??= (await read()).review
    return wallet.signTypedData({ ...shown, message: { ...shown.message, decision, reason, task } })
  }
  const decide = (decision: 'accept' | 'reject', body: Record<string, unknown>) =>
    app.call('POST', `${path}/${decision}`, { body })
  return { ...app, seller, task: created.json, path, deliver, read, sign, decide }
}

describe('jobs: deadlines, delivery under review, the buyer decides', () => {
  test('behavior: a skill states sla_seconds and review_seconds; its paid task carries due_at and review_seconds', async () => {
    const { call, task } = await ordered()
    const profile = (await call('GET', '/api/community/agents/seller')).json
    expect(profile.skills[0]).toMatchObject({ sla: 'ten minutes', sla_seconds: 600, review_seconds: 3600 })
    expect(profile.skills[2]).toMatchObject({ sla_seconds: null, review_seconds: 0 })
    expect(profile.deliveries).toEqual({
      completed: 0,
      onTime: 0,
      late: 0,
      onTimeRatio: null,
      disputes: 0,
      refunds: 0,
    })
    expect(task).toMatchObject({ status: 'paid', sla_seconds: 600, review_seconds: 3600, records: [] })
    expect(Date.parse(task.due_at) - Date.parse(task.paid_at)).toBe(600_000)
  })

  test('error: sla_seconds and review_seconds out of range or not whole get a 400 naming the field', async () => {
    const app = await testApp()
    for (const skill of [
      { name: 'a', sla_seconds: 0 },
      { name: 'a', sla_seconds: 1.5 },
      { name: 'a', review_seconds: -1 },
      { name: 'a', review_seconds: 31 * 24 * 3600 },
      { name: 'a', sla_seconds: '60' },
    ]) {
      const answer = await app.call('POST', '/api/agents/register', {
        body: { name: 'bad', skills: [skill] },
      })
      expectProblemShape(answer, 400, 'invalid_body')
      const field = Object.keys(skill)[1]
      expect(answer.json.errors[0].pointer).toBe(`/skills/0/${field}`)
    }
  })

  test('behavior: delivery under review shows the result and the review to sign; the buyer accepts -> completed', async () => {
    const { deliver, read, sign, decide, call, clock } = await ordered()
    clock.advance(60_000)
    const delivered = await deliver()
    expect(delivered.status).toBe(200)
    expect(delivered.json).toMatchObject({ status: 'delivered', result_url: 'https://example.com/result' })
    const task = await read()
    expect(task).toMatchObject({
      status: 'delivered',
      result_url: 'https://example.com/result',
      outcome: null,
    })
    expect(Date.parse(task.review_until) - Date.parse(task.delivered_at)).toBe(3_600_000)
    expect(task.review.message).toMatchObject({
      agent: 'seller',
      task: task.task_id,
      decision: '',
      reason: '',
    })
    expect(task.next_steps.check_status).toContain('/accept')
    const accepted = await decide('accept', { signature: await sign(buyer, 'accept') })
    expect(accepted.status).toBe(200)
    expect(accepted.json).toMatchObject({ status: 'completed', outcome: 'accepted', review: null })
    const profile = (await call('GET', '/api/community/agents/seller')).json
    // A free job counts as completed, never toward the on-time ratio (only jobs paid on chain by others do).
    expect(profile.deliveries).toMatchObject({ completed: 1, onTime: 0, late: 0, onTimeRatio: null })
    const kinds = (await call('GET', '/api/feed/live')).json.events.map(
      (event: { kind: string }) => event.kind,
    )
    expect(kinds.slice(0, 2)).toEqual(['task.completed', 'task.delivered'])
    const again = await decide('accept', { signature: await sign(buyer, 'accept') })
    expectProblemShape(again, 409, 'task_not_delivered')
  })

  test("behavior: the buyer rejects with a reason -> rejected, a dispute record on the task and its history row; a free task's is not counted on the profile", async () => {
    const { deliver, sign, decide, call, read } = await ordered()
    await deliver()
    const reason = 'The summary covers another topic.'
    const rejected = await decide('reject', { reason, signature: await sign(buyer, 'reject', reason) })
    expect(rejected.status).toBe(200)
    expect(rejected.json).toMatchObject({ status: 'rejected', outcome: 'rejected' })
    expect((await read()).records).toEqual([
      {
        kind: 'dispute',
        by: 'buyer',
        wallet: buyer.address,
        at: rejected.json.records[0].at,
        amount: 0,
        reason,
        tx_hash: null,
      },
    ])
    const profile = (await call('GET', '/api/community/agents/seller')).json
    // Free: the profile counts disputes over money paid only (tests/security/freeDisputes.test.ts).
    expect(profile.deliveries).toMatchObject({ completed: 0, disputes: 0 })
    const history = (await call('GET', '/api/agents/seller/tasks?status=rejected')).json
    expect(history.tasks[0]).toMatchObject({ status: 'rejected', disputes: 1, refunds: 0, on_time: true })
  })

  test('attack: signatures by another wallet, the seller, for the other decision, another reason or another task change nothing', async () => {
    const { deliver, sign, decide, read, task } = await ordered()
    await deliver()
    const other = await ordered()
    await other.deliver()
    const forgeries = [
      ['accept', { signature: await sign(stranger, 'accept') }],
      ['accept', { signature: await sign(sellerWallet, 'accept') }],
      ['reject', { reason: 'bad', signature: await sign(buyer, 'accept', 'bad') }],
      ['reject', { reason: 'bad', signature: await sign(buyer, 'reject', 'another reason') }],
      ['accept', { signature: await sign(buyer, 'accept', '', other.task.task_id) }],
      ['accept', { signature: `0x${'00'.repeat(65)}` }],
    ] as const
    for (const [decision, body] of forgeries) {
      const answer = await decide(decision, body)
      expectProblemShape(answer, 401, 'invalid_signature')
    }
    // The buyer's real signature for the other task does not decide this one.
    const theirs = await other.decide('accept', { signature: await other.sign(buyer, 'accept') })
    expect(theirs.status).toBe(200)
    const mine = await read()
    expect(mine).toMatchObject({ status: 'delivered', records: [] })
    expect(mine.task_id).toBe(task.task_id)
    const missing = await decide('accept', {})
    expectProblemShape(missing, 400, 'invalid_body')
  })

  test('behavior: silence past review_until accepts; reads show it at once and the sweep stores it', async () => {
    const { deliver, read, clock, market, sign, decide, store, task } = await ordered()
    await deliver()
    const signature = await sign(buyer, 'reject', 'too late')
    clock.advance(3_600_000)
    expect(await read()).toMatchObject({ status: 'completed', outcome: 'accepted_by_silence' })
    const late = await decide('reject', { reason: 'too late', signature })
    expectProblemShape(late, 409, 'task_not_delivered')
    expect(await market.settleDueJobs()).toEqual({ late: 0, accepted: 1 })
    expect(await market.settleDueJobs()).toEqual({ late: 0, accepted: 0 })
    const stored = await store.getTask('seller', task.task_id)
    expect(stored?.status).toBe('completed')
    expect(stored?.completedAt?.toISOString()).toBe((await read()).review_until)
  })

  test('behavior: past due_at an undelivered task expires late; the seller can no longer deliver', async () => {
    const { deliver, read, clock, market, call } = await ordered('quick')
    clock.advance(60_000)
    expect(await read()).toMatchObject({ status: 'expired', outcome: 'late' })
    expectProblemShape(await deliver(), 409, 'task_overdue')
    expect(await market.settleDueJobs()).toEqual({ late: 1, accepted: 0 })
    const profile = (await call('GET', '/api/community/agents/seller')).json
    // Free: not counted (tests/chain/jobs.test.ts counts a paid job's lateness).
    expect(profile.deliveries).toMatchObject({ onTime: 0, late: 0, onTimeRatio: null })
    const kinds = (await call('GET', '/api/feed/live')).json.events.map(
      (event: { kind: string }) => event.kind,
    )
    expect(kinds[0]).toBe('task.late')
  })

  test("behavior: a skill without a review window completes on delivery, as SPEC's paid -> completed", async () => {
    const { deliver, read } = await ordered('plain')
    const done = await deliver()
    expect(done.json).toMatchObject({ status: 'completed', outcome: 'delivered', due_at: null })
    expect((await read()).result_url).toBe('https://example.com/result')
  })

  test('error: a task whose buyer is known by no wallet cannot be decided by anyone; silence decides', async () => {
    const { deliver, decide, read } = await ordered('reviewed', null)
    await deliver()
    expect((await read()).review).toBeNull()
    const forged = await decide('accept', { signature: `0x${'11'.repeat(65)}` })
    expectProblemShape(forged, 409, 'no_buyer_wallet')
  })
})
