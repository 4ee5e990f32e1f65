import type { RateBuckets } from '@agentmarket/core'
import { spendTokens } from '@agentmarket/core/rows'
import { admissionOf } from './admission.ts'
import { boundedCall } from './faults.ts'
import type { PostgresDatabase } from './open.ts'
import { type DeadlineTimer, progressOf } from './progress.ts'

/** How many takes pass between two sweeps of the rows of full buckets. */
const SWEEP_EVERY = 1000

/**
 * Token buckets in PostgreSQL, shared by every node on the database (wrap them in leasedRateBuckets so a request
 * rarely writes). One upsert checks and spends atomically: the row is locked while the bucket moves, and it moves only
 * when all of the spend fits in the window; RETURNING says whether it did. A take answers within `deadlineMs`, and a
 * database that is down answers StoreUnavailableError ('unchanged': a spent token is no record of the client's).
 * @example const buckets = leasedRateBuckets(postgresRateBuckets(database))
 */
export function postgresRateBuckets(
  database: PostgresDatabase,
  { deadlineMs = 1_200, timer }: { deadlineMs?: number; timer?: DeadlineTimer } = {},
): RateBuckets {
  const { sql } = database
  let takes = 0
  const take: RateBuckets['take'] = async (key, policy, cost, nowMs) => {
    if (++takes % SWEEP_EVERY === 0) await sql`delete from rate_buckets where tat <= ${nowMs}`.catch(() => {})
    const spend = (cost * policy.windowSeconds * 1000) / policy.limit
    const window = policy.windowSeconds * 1000
    const [spent] = await sql<{ tat: number }[]>`
        insert into rate_buckets (key, tat) values (${key}, ${nowMs}::float8 + ${spend}::float8)
        on conflict (key) do update set tat = greatest(rate_buckets.tat, ${nowMs}::float8) + ${spend}::float8
        where greatest(rate_buckets.tat, ${nowMs}::float8) + ${spend}::float8 - ${nowMs}::float8 <= ${window}::float8 + 1e-6
        returning tat`
    if (spent !== undefined) return spendTokens(Number(spent.tat) - spend, nowMs, policy, cost).decision
    const [stored] = await sql<{ tat: number }[]>`select tat from rate_buckets where key = ${key}`
    const decision = spendTokens(Number(stored?.tat ?? nowMs), nowMs, policy, cost).decision
    // Tokens that came back between the two statements are for the next request; this one was refused.
    return decision.allowed
      ? { ...decision, allowed: false, retryAfterSeconds: 1, retryAfterMs: 1 }
      : decision
  }
  // The database's one count (the store's too): a take waiting while other calls complete waits on (the database is
  // busy, not gone), and a database the store found down is down for the takes.
  const progress = progressOf(database)
  const admission = admissionOf(database, database.sql.options.max)
  return {
    take: (key, policy, cost, nowMs) =>
      boundedCall(() => take(key, policy, cost, nowMs), {
        ms: deadlineMs,
        wrote: false,
        progress,
        admission,
        ...(timer ? { timer } : {}),
      }),
  }
}
