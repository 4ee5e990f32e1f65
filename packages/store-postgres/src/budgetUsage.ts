import type { BudgetUsage, SpendCap, TaskRecord } from '@agentmarket/core'
import { passesCap } from '@agentmarket/core/rows'
import { and, eq, sql } from 'drizzle-orm'
import type { Writer } from './agentStore.ts'
import { tasks } from './schema.ts'

/** The spending of a buyer's day (Budget.ts taskSpending in SQL); by the partial index tasks_by_buyer. */
export async function usageOf(
  writer: Writer,
  buyerKey: string,
  from: Date,
  to: Date,
  now: Date,
): Promise<BudgetUsage> {
  const [row] = await writer
    .select({
      spent: sql<string>`coalesce(sum(case when ${tasks.paidAt} is not null
        then greatest(greatest(${tasks.priceBaseUnits}, coalesce(${tasks.paidAmountBaseUnits}::bigint, 0))
          - ${tasks.refundedBaseUnits}, 0) else 0 end), 0)::text`,
      held: sql<string>`coalesce(sum(case when ${tasks.paidAt} is null and ${tasks.status} = 'pending_payment'
        and (${tasks.expiresAt} is null or ${tasks.expiresAt} > ${now.getTime()}) then ${tasks.priceBaseUnits} else 0 end), 0)::text`,
    })
    .from(tasks)
    .where(
      and(
        eq(tasks.buyerKey, buyerKey),
        sql`${tasks.createdAt} >= ${from.getTime()}`,
        sql`${tasks.createdAt} < ${to.getTime()}`,
      ),
    )
  return { spentBaseUnits: BigInt(row?.spent ?? '0'), heldBaseUnits: BigInt(row?.held ?? '0') }
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
