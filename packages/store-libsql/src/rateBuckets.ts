import type { RateBuckets } from '@agentmarket/core'
import { spendTokens } from '@agentmarket/core/rows'
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
export function libsqlRateBuckets({ connection }: Database): RateBuckets {
  let takes = 0
  return {
    async take(key, policy, cost, nowMs) {
      if (++takes % SWEEP_EVERY === 0) {
        try {
          connection.run('DELETE FROM rate_buckets WHERE tat <= ?', [nowMs])
        } catch {
          // A sweep that finds the lock held is skipped: the next one takes these rows too.
        }
      }
      const spend = (cost * policy.windowSeconds * 1000) / policy.limit
      const window = policy.windowSeconds * 1000
      const [spent] = await connection.unlocked(() =>
        connection.all(SPEND, { key, now: nowMs, spend, window }),
      )
      const tat = spent?.tat
      if (tat !== undefined) return spendTokens(Number(tat) - spend, nowMs, policy, cost).decision
      const [stored] = connection.all('SELECT tat FROM rate_buckets WHERE key = ?', [key])
      const decision = spendTokens(Number(stored?.tat ?? nowMs), nowMs, policy, cost).decision
      // Tokens that came back between the two statements are for the next request; this one was refused.
      return decision.allowed
        ? { ...decision, allowed: false, retryAfterSeconds: 1, retryAfterMs: 1 }
        : decision
    },
  }
}
