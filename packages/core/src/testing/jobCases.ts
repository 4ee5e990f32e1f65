import { strictEqual as equal, deepStrictEqual as same } from 'node:assert/strict'
import { jobSteps } from '../actions/tasks/jobSteps.ts'
import type { TaskEntry } from '../Job.ts'
import { buyerWalletOf, type TaskRecord, taskDueAt, taskReviewUntil } from '../Task.ts'
import {
  at,
  BUYER_A,
  BUYER_B,
  hex32,
  inCapitals,
  paidTask,
  type StoreTest,
  sampleAgent,
  samplePayment,
  sampleTask,
  taskEvent,
  trustOf,
  USDC,
  type WithStore,
} from './fixtures.ts'

/** A wallet that decided nothing. */
const USDC_WALLET = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'

const dispute = (minutes: number, reason: string): TaskEntry => ({
  kind: 'dispute',
  by: 'buyer',
  wallet: BUYER_A,
  at: at(minutes),
  amountBaseUnits: 10_000n,
  reason,
  txHash: null,
})

/** The conformance cases of jobs (Store.changeTask, listDueJobs): deadlines, review, records, counts on the seller. */
export function jobStoreCases(test: StoreTest, withStore: WithStore): void {
  test(
    'behavior: a delivery under review, then its acceptance, land once each, with the end of the review derived',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      const task = paidTask(1, {
        reviewSeconds: 600,
        reveal: 'after_acceptance',
        payment: samplePayment(1, { from: BUYER_A }),
      })
      await store.insertTask(task, [])
      const delivery = jobSteps.delivery(task, 'https://example.com/r', at(40))
      equal(await store.changeTask(delivery), true)
      equal(await store.changeTask(delivery), false)
      const delivered = await store.getTask('sample-agent', task.id)
      equal(delivered?.status, 'delivered')
      same(delivered?.deliveredAt, at(40))
      equal(delivered?.resultUrl, 'https://example.com/r')
      equal(delivered?.reveal, 'after_acceptance')
      same(delivered && taskReviewUntil(delivered), at(50))
      equal((await store.getAgent('sample-agent'))?.onTimeTasks, 1)
      equal((await store.getAgent('sample-agent'))?.completedTasks, 0)

      same(
        (await store.listDueJobs(at(49), 10)).map((due) => due.id),
        [],
      )
      const [due] = await store.listDueJobs(at(50), 10)
      equal(due?.id, task.id)
      if (!due) return
      const silence = jobSteps.acceptance(due, at(51), true)
      equal(await store.changeTask(silence), true)
      equal(await store.changeTask(jobSteps.rejection(task, at(51), BUYER_A, 'late')), false)
      const completed = await store.getTask('sample-agent', task.id)
      equal(completed?.status, 'completed')
      equal(completed?.outcome, 'accepted_by_silence')
      same(completed?.completedAt, at(50))
      const agent = await store.getAgent('sample-agent')
      equal(agent?.completedTasks, 1)
      same(await trustOf(store), { credit: 10_000n, buyers: 1 })
      same(await store.listDueJobs(at(100), 10), [])
      same(
        (await store.listEvents({ limit: 10 })).map((event) => event.kind),
        ['task.completed', 'task.delivered'],
      )
    }),
  )

  test(
    'behavior: a rejection appends a dispute record and counts it; further records append in order; nothing credits trust',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      const task = paidTask(2, { reviewSeconds: 600, payment: samplePayment(2, { from: BUYER_A }) })
      await store.insertTask(task, [])
      equal(await store.changeTask(jobSteps.delivery(task, 'https://example.com/r', at(40))), true)
      const rejection = jobSteps.rejection(task, at(45), BUYER_A, 'wrong answer')
      equal(await store.changeTask(rejection), true)
      equal(await store.changeTask(rejection), false)
      const rejected = await store.getTask('sample-agent', task.id)
      equal(rejected?.status, 'rejected')
      equal(rejected?.outcome, 'rejected')
      same(rejected?.entries, [dispute(45, 'wrong answer')])
      const refund: TaskEntry = {
        kind: 'refund',
        by: 'seller',
        wallet: null,
        at: at(60),
        amountBaseUnits: 7n * USDC,
        reason: 'sorry "quoted" \\ text',
        txHash: hex32(9),
      }
      equal(await store.changeTask(jobSteps.refund({ ...task, status: 'rejected' }, refund)), true)
      same((await store.getTask('sample-agent', task.id))?.entries, [dispute(45, 'wrong answer'), refund])
      const agent = await store.getAgent('sample-agent')
      same(
        [agent?.disputedTasks, agent?.refundedTasks, agent?.completedTasks, agent?.onTimeTasks],
        [1, 1, 0, 1],
      )
      same(await trustOf(store), { credit: 0n, buyers: 0 })
    }),
  )

  test(
    'behavior: a task paid with an SLA carries its deadline; past it the sweep lists it and lateness lands once; a late task is never purged',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      const task = sampleTask({ slaSeconds: 300, expiresAt: at(20) })
      await store.insertTask(task, [])
      equal(await store.markTaskPaid(task.id, samplePayment(3, { at: at(10) }), []), 'paid')
      const paid = await store.getTask('sample-agent', task.id)
      same(paid && taskDueAt(paid), at(15))
      same(await store.listDueJobs(at(14), 10), [])
      const [due] = await store.listDueJobs(at(15), 10)
      equal(due?.id, task.id)
      if (!due) return
      equal(await store.changeTask(jobSteps.lateness(due, at(16))), true)
      equal(await store.changeTask(jobSteps.lateness(due, at(16))), false)
      equal(await store.changeTask(jobSteps.delivery(due, 'https://example.com/r', at(17))), false)
      const late = await store.getTask('sample-agent', task.id)
      same([late?.status, late?.outcome, late?.resultUrl], ['expired', 'late', null])
      equal((await store.getAgent('sample-agent'))?.lateTasks, 1)
      // Unpaid expired tasks are purged after the retention; a paid one keeps its money's history.
      const unpaid = sampleTask({ expiresAt: at(20) })
      await store.insertTask(unpaid, [])
      same(await store.expireTasks(at(21), at(10_000), 10), { expired: 1, purged: 1 })
      equal(await store.getTask('sample-agent', unpaid.id), null)
      equal((await store.getTask('sample-agent', task.id))?.status, 'expired')
    }),
  )

  test(
    'behavior: a task paid at its creation carries its deadline too; without an SLA it has none and is never due',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      const timed = paidTask(4, { slaSeconds: 60 })
      const open = paidTask(5)
      await store.insertTask(timed, [])
      await store.insertTask(open, [])
      same(
        (await store.listDueJobs(at(1_000_000), 10)).map((due) => due.id),
        [timed.id],
      )
    }),
  )

  test(
    'behavior: a finished task is rated once; each wallet is one vote (its mean), counted again on every rating; a rating-only wallet adds no paying buyer',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      const rate = (wallet: `0x${string}`, score: number, minutes: number) => ({
        score,
        comment: '',
        wallet,
        at: at(minutes),
      })
      const done = [1, 2, 3].map((n) =>
        paidTask(10 + n, { status: 'completed', payment: samplePayment(10 + n, { from: BUYER_A }) }),
      )
      const open = paidTask(20)
      for (const task of [...done, open]) await store.insertTask(task, [])
      equal(await store.rateTask(open.id, rate(BUYER_A, 5, 40), []), false)
      equal(await store.rateTask(done[0]?.id ?? '', rate(BUYER_A, 1, 41), []), true)
      equal(await store.rateTask(done[0]?.id ?? '', rate(BUYER_A, 5, 42), []), false)
      equal(await store.rateTask(done[1]?.id ?? '', rate(inCapitals(BUYER_A), 2, 43), []), true)
      const other = paidTask(30, { status: 'rejected', payment: samplePayment(30, { from: BUYER_B }) })
      await store.insertTask(other, [])
      equal(await store.rateTask(other.id, rate(BUYER_B, 5, 44), [taskEvent('task.rated', other)]), true)
      const agent = await store.getAgent('sample-agent')
      // BUYER_A: mean 1.5 -> 125 thousandths; BUYER_B: 5 -> 1000; but neither was credited (the tasks were stored
      // finished), so each vote weighs 0 (trustCases.ts has votes that weigh what their wallet paid).
      same(
        [
          agent?.ratingCount,
          agent?.ratingSum,
          agent?.ratedBuyers,
          agent?.ratingVotes,
          agent?.ratingWeight,
          agent?.payingBuyers,
        ],
        [3, 8, 2, 0, 0, 0],
      )
      const page = await store.listRatedTasks('SAMPLE-AGENT', 2, 0)
      equal(page.total, 3)
      same(
        page.tasks.map((task) => task.rating?.score),
        [5, 2],
      )
      same((await store.getTask('sample-agent', other.id))?.rating, rate(BUYER_B, 5, 44))
      same(
        (await store.listEvents({ limit: 5 })).map((event) => event.kind),
        ['task.rated'],
      )
    }),
  )

  test(
    'behavior: racing steps of one job land one: of a delivery, an acceptance and a lateness, exactly one wins',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      const task = paidTask(6, { reviewSeconds: 60, slaSeconds: 60 })
      await store.insertTask(task, [])
      const outcomes = await Promise.all([
        store.changeTask(jobSteps.delivery(task, 'https://example.com/a', at(31))),
        store.changeTask(jobSteps.lateness(task, at(31))),
        store.changeTask(jobSteps.delivery(task, 'https://example.com/b', at(31))),
      ])
      equal(outcomes.filter(Boolean).length, 1)
      const agent = await store.getAgent('sample-agent')
      equal((agent?.onTimeTasks ?? 0) + (agent?.lateTasks ?? 0), 1)
    }),
  )

  test(
    "behavior: buyerDecisions counts each wallet's signed acceptances and rejections across agents (payer first), not silence",
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      await store.insertAgent(sampleAgent({ name: 'other-agent' }), [])
      const decide = async (
        n: number,
        decision: 'accept' | 'reject' | 'silence' | 'none',
        overrides: Partial<TaskRecord>,
      ) => {
        const task = paidTask(n, { reviewSeconds: 600, ...overrides })
        await store.insertTask(task, [])
        await store.changeTask(jobSteps.delivery(task, 'https://example.com/r', at(40)))
        const wallet = buyerWalletOf(task) ?? BUYER_A
        if (decision === 'accept') await store.changeTask(jobSteps.acceptance(task, at(41), false))
        if (decision === 'silence') await store.changeTask(jobSteps.acceptance(task, at(51), true))
        if (decision === 'reject') await store.changeTask(jobSteps.rejection(task, at(41), wallet, 'no'))
      }
      const paidBy = (n: number, from: string) =>
        samplePayment(n, { from: from as TaskRecord['buyerWallet'] })
      await decide(1, 'accept', { payment: paidBy(1, BUYER_A) })
      await decide(2, 'reject', { payment: paidBy(2, inCapitals(BUYER_A)), agentName: 'other-agent' })
      await decide(3, 'silence', { payment: paidBy(3, BUYER_A) })
      await decide(4, 'none', { payment: paidBy(4, BUYER_A) })
      // The payer decides, not the wallet the order named; without a payer, the order's wallet.
      await decide(5, 'reject', { payment: paidBy(5, BUYER_A), buyerWallet: BUYER_B })
      await decide(6, 'reject', {
        payment: samplePayment(6, { method: 'free', from: null }),
        buyerWallet: BUYER_B,
      })
      const counts = await store.buyerDecisions([inCapitals(BUYER_A), BUYER_B, USDC_WALLET])
      same(
        counts.map((count) => ({ ...count })).sort((a, b) => a.wallet.localeCompare(b.wallet)),
        [
          { wallet: BUYER_A.toLowerCase(), accepted: 1, rejected: 2 },
          { wallet: BUYER_B.toLowerCase(), accepted: 0, rejected: 1 },
        ],
      )
      same(await store.buyerDecisions([]), [])
    }),
  )
}
