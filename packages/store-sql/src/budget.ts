import type { BudgetUsage } from '@agentmarket/core'
import { type SQL, sql } from 'drizzle-orm'
import type { SqlDialect } from './dialect.ts'
import type { Tables } from './executor.ts'

/** What the budget sum binds: each a value, or a drizzle placeholder when a store prepares the text once. */
export type BudgetBounds = { now: unknown; buyerKey: unknown; from: unknown; to: unknown }

/**
 * The spending of one buyer's day (Budget.ts taskSpending in SQL), by the partial index tasks_by_buyer: `spent` is
 * paid less refunds, `held` what orders still awaiting payment at `now` hold; both as decimal text, read with
 * `budgetUsageOf`. `cast(… as bigint)` reads the paid amount's text as an integer in both dialects.
 */
export function budgetUsageSql({ tasks }: Tables, dialect: SqlDialect, bound: BudgetBounds): SQL {
  const paid = dialect.greatest(
    tasks.priceBaseUnits,
    sql`coalesce(cast(${tasks.paidAmountBaseUnits} as bigint), 0)`,
  )
  return sql`select
      cast(coalesce(sum(case when ${tasks.paidAt} is not null
        then ${dialect.greatest(sql`${paid} - ${tasks.refundedBaseUnits}`, sql`0`)} else 0 end), 0) as text) as spent,
      cast(coalesce(sum(case when ${tasks.paidAt} is null and ${tasks.status} = 'pending_payment'
        and (${tasks.expiresAt} is null or ${tasks.expiresAt} > ${bound.now})
        then ${tasks.priceBaseUnits} else 0 end), 0) as text) as held
    from ${tasks}
    where ${tasks.buyerKey} = ${bound.buyerKey} and ${tasks.createdAt} >= ${bound.from} and ${tasks.createdAt} < ${bound.to}`
}

/** The usage a row of `budgetUsageSql` says (no row: nothing spent). */
export function budgetUsageOf(row: { spent?: unknown; held?: unknown } | undefined): BudgetUsage {
  return { spentBaseUnits: BigInt(String(row?.spent ?? 0)), heldBaseUnits: BigInt(String(row?.held ?? 0)) }
}
