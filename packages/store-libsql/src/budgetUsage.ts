import type { BudgetUsage, SpendCap, TaskRecord } from '@agentmarket/core'
import { passesCap } from '@agentmarket/core/rows'
import { budgetUsageOf, budgetUsageSql, sqliteSql } from '@agentmarket/store-sql'
import { fillPlaceholders, sql } from 'drizzle-orm'
import { toStatement } from './connection.ts'
import type { Database } from './open.ts'
import { tables } from './schema.ts'
import type { WriteStep } from './writes.ts'

/** Thrown inside a capped write's transaction to undo it: the buyer's day is spent. */
export class OverCap extends Error {
  constructor(readonly usage: BudgetUsage) {
    super('over the buyer budget')
  }
}

/** The budget sum (store-sql budget.ts) as SQLite text, rendered once; its bound values filled in per call. */
const BUDGET_USAGE = toStatement(
  budgetUsageSql(tables, sqliteSql, {
    now: sql.placeholder('now'),
    buyerKey: sql.placeholder('buyerKey'),
    from: sql.placeholder('from'),
    to: sql.placeholder('to'),
  }),
)

/** A buyer's day as the store sums it, and the step that refuses a write past its cap. */
export function budgetCaps(database: Database) {
  /** The spending of a buyer's day (Budget.ts taskSpending in SQL); by the partial index tasks_by_buyer. */
  const usageOf = (buyerKey: string, from: Date, to: Date, now: Date): BudgetUsage => {
    const bound = { now: now.getTime(), buyerKey, from: from.getTime(), to: to.getTime() }
    return budgetUsageOf(
      database.connection.get(BUDGET_USAGE.sql, fillPlaceholders(BUDGET_USAGE.args, bound)),
    )
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
