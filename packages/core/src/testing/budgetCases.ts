import { strictEqual as equal, deepStrictEqual as same } from 'node:assert/strict'
import { jobSteps } from '../actions/tasks/jobSteps.ts'
import type { SpendCap } from '../Budget.ts'
import type { TaskEntry } from '../Job.ts'
import {
  at,
  BUYER_A,
  type StoreTest,
  sampleAgent,
  samplePayment,
  sampleTask,
  type WithStore,
} from './fixtures.ts'

/** A cap of `limit` base units on buyer `bot`'s day T0 (24 h from it), judged at minute `now`. */
const capOf = (limit: bigint, now = 5): SpendCap => ({
  buyerKey: 'bot',
  limitBaseUnits: limit,
  from: at(0),
  to: at(24 * 60),
  now: at(now),
})

/** An order of 10,000 base units by `buyer` (any case; with its key), awaiting payment until minute 60. */
const order = (buyer = 'Bot', overrides: Parameters<typeof sampleTask>[0] = {}) =>
  sampleTask({ buyer, buyerKey: buyer.toLowerCase(), expiresAt: at(60), createdAt: at(1), ...overrides })

/** The conformance cases of spending budgets (Store.insertTask with a cap, budgetUsage). */
export function budgetStoreCases(test: StoreTest, withStore: WithStore): void {
  test(
    "behavior: budgetUsage sums a buyer's day: paid less refunds, held while awaiting payment, nothing once expired",
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      const paid = order('BOT', { status: 'paid', payment: samplePayment(1) })
      const held = order('bot')
      const expired = order('bot', { expiresAt: at(3) })
      const otherBuyer = order('someone')
      // Naming the buyer without its key counts nothing.
      const unproven = order('bot', { buyerKey: null })
      const otherDay = order('bot', { createdAt: at(24 * 60) })
      for (const task of [paid, held, expired, otherBuyer, otherDay, unproven])
        await store.insertTask(task, [])
      same(await store.budgetUsage('bot', at(0), at(24 * 60), at(5)), {
        spentBaseUnits: 10_000n,
        heldBaseUnits: 10_000n,
      })
      const refund: TaskEntry = {
        kind: 'refund',
        by: 'seller',
        wallet: BUYER_A,
        at: at(6),
        amountBaseUnits: 4_000n,
        reason: '',
        txHash: null,
      }
      equal(await store.changeTask(jobSteps.refund(paid, refund)), true)
      equal(await store.changeTask(jobSteps.refund(paid, { ...refund, amountBaseUnits: 9_000n })), true)
      // Refunds past the price count as the whole price, never below zero.
      same(await store.budgetUsage('bot', at(0), at(24 * 60), at(61)), {
        spentBaseUnits: 0n,
        heldBaseUnits: 0n,
      })
    }),
  )

  test(
    "behavior: a capped insert lands within the cap and is refused past it, nothing written, with the day's usage",
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      equal((await store.insertTask(order(), [], capOf(20_000n))).outcome, 'inserted')
      equal((await store.insertTask(order(), [], capOf(20_000n))).outcome, 'inserted')
      const refused = order()
      same(await store.insertTask(refused, [], capOf(20_000n)), {
        outcome: 'budget_exceeded',
        usage: { spentBaseUnits: 0n, heldBaseUnits: 20_000n },
      })
      equal(await store.getTask('sample-agent', refused.id), null)
      // Holds expired by the cap's `now` give their room back.
      equal((await store.insertTask(order(), [], capOf(20_000n, 61))).outcome, 'inserted')
    }),
  )

  test(
    'attack: 40 racing capped inserts against a cap of 3 orders: exactly 3 land',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      const outcomes = await Promise.all(
        Array.from({ length: 40 }, () => store.insertTask(order(), [], capOf(30_000n))),
      )
      equal(outcomes.filter((outcome) => outcome.outcome === 'inserted').length, 3)
      same((await store.budgetUsage('bot', at(0), at(24 * 60), at(5))).heldBaseUnits, 30_000n)
    }),
  )
}
