import type { BudgetUsage, SpendCap, TaskRecord } from '@agentmarket/core'
import { passesCap } from '@agentmarket/core/rows'
import type { Database } from './open.ts'
import type { WriteStep } from './writes.ts'

/** Thrown inside a capped write's transaction to undo it: the buyer's day is spent. */
export class OverCap extends Error {
  constructor(readonly usage: BudgetUsage) {
    super('over the buyer budget')
  }
}

/** The spending of one buyer's day: paid less refunds, and held by orders still awaiting payment at the first value. */
const BUDGET_USAGE = `select
    coalesce(sum(case when paid_at is not null then max(max(price_base_units,
      coalesce(cast(paid_amount_base_units as integer), 0)) - refunded_base_units, 0) else 0 end), 0) as spent,
    coalesce(sum(case when paid_at is null and status = 'pending_payment' and (expires_at is null or expires_at > ?)
      then price_base_units else 0 end), 0) as held
  from tasks where buyer_key = ? and created_at >= ? and created_at < ?`

/** A buyer's day as the store sums it, and the step that refuses a write past its cap. */
export function budgetCaps(database: Database) {
  /** The spending of a buyer's day (Budget.ts taskSpending in SQL); by the partial index tasks_by_buyer. */
  const usageOf = (buyerKey: string, from: Date, to: Date, now: Date): BudgetUsage => {
    const row = database.connection.get(BUDGET_USAGE, [now.getTime(), buyerKey, from.getTime(), to.getTime()])
    return { spentBaseUnits: BigInt(Number(row?.spent ?? 0)), heldBaseUnits: BigInt(Number(row?.held ?? 0)) }
  }

  /** A step that refuses the insert after it when the buyer's day would pass its cap (run inside the transaction). */
  const withinCap =
    (task: TaskRecord, cap: SpendCap): WriteStep =>
    () => {
      const usage = usageOf(cap.buyerKey, cap.from, cap.to, cap.now)
      if (passesCap(usage, task.priceBaseUnits, cap)) throw new OverCap(usage)
      return { changes: 0, lastInsertRowid: 0 }
    }

  return { usageOf, withinCap }
}
