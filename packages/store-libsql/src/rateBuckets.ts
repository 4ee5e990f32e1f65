import { type RateBuckets, spendTokens } from '@agentmarket/core'
import type { Database } from './open.ts'

/** How many takes pass between two sweeps of the rows of full buckets. */
const SWEEP_EVERY = 1000

// One statement, so the check and the spend are atomic across every process on the database: the bucket moves only
// when all `spend` ms of tokens fit in the window; RETURNING says whether it did.
const SPEND = `INSERT INTO rate_buckets (key, tat) VALUES (:key, :now + :spend)
ON CONFLICT (key) DO UPDATE SET tat = max(tat, :now) + :spend
WHERE max(tat, :now) + :spend - :now <= :window + 1e-6
RETURNING tat`

/**
 * Token buckets in the database, shared by every server process that opens it (wrap them in leasedRateBuckets so a
 * request rarely writes).
 * @example const buckets = leasedRateBuckets(libsqlRateBuckets(database))
 */
export function libsqlRateBuckets({ client }: Database): RateBuckets {
  let takes = 0
  return {
    async take(key, policy, cost, nowMs) {
      if (++takes % SWEEP_EVERY === 0)
        client.execute({ sql: 'DELETE FROM rate_buckets WHERE tat <= ?', args: [nowMs] }).catch(() => {})
      const spend = (cost * policy.windowSeconds * 1000) / policy.limit
      const window = policy.windowSeconds * 1000
      const spent = await client.execute({ sql: SPEND, args: { key, now: nowMs, spend, window } })
      const tat = spent.rows[0]?.tat
      if (tat !== undefined) return spendTokens(Number(tat) - spend, nowMs, policy, cost).decision
      const stored = await client.execute({ sql: 'SELECT tat FROM rate_buckets WHERE key = ?', args: [key] })
      const decision = spendTokens(Number(stored.rows[0]?.tat ?? nowMs), nowMs, policy, cost).decision
      // Tokens that came back between the two statements are for the next request; this one was refused.
      return decision.allowed
        ? { ...decision, allowed: false, retryAfterSeconds: 1, retryAfterMs: 1 }
        : decision
    },
  }
}
