import type { BudgetUsage, SpendCap, TaskRecord } from '@agentmarket/core'
import { passesCap } from '@agentmarket/core/rows'
import { budgetUsageOf, budgetUsageSql, postgresSql } from '@agentmarket/store-sql'
import { sql } from 'drizzle-orm'
import type { Writer } from './agentStore.ts'
import { tables } from './schema.ts'

/** The spending of a buyer's day (store-sql budget.ts), by the partial index tasks_by_buyer. */
export async function usageOf(
  writer: Writer,
  buyerKey: string,
  from: Date,
  to: Date,
  now: Date,
): Promise<BudgetUsage> {
  const bound = { now: now.getTime(), buyerKey, from: from.getTime(), to: to.getTime() }
  const [row] = await writer.execute(budgetUsageSql(tables, postgresSql, bound))
  return budgetUsageOf(row)
}

/**
 * Inside a transaction: takes the buyer's advisory lock (one buyer's capped writes on every node run one at a time,
 * until the transaction ends), then sums its day; the usage when `task` would pass the cap, else null.
 */
export async function overCap(tx: Writer, task: TaskRecord, cap: SpendCap): Promise<BudgetUsage | null> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`budget:${cap.buyerKey}`}, 0))`)
  const usage = await usageOf(tx, cap.buyerKey, cap.from, cap.to, cap.now)
  return passesCap(usage, task.priceBaseUnits, cap) ? usage : null
}
