import { memoryRateBuckets, type RateBuckets } from '@agentmarket/core'
import { DEFAULT_RATE_POLICIES, rateLimiter } from '@agentmarket/core/routes'
import type { RateLimitSettings } from '../plugins/rateLimits.ts'

/** One spend of a rate bucket: the bucket's class (`read`, `write`, `payment`...) and the tokens taken. */
export type RateSpend = { bucket: string; tokens: number }

/**
 * Rate limits for testApp that never refuse (each policy a million a minute) and record in `spent` every bucket a
 * request spends, so a test asserts what a request costs. Empty `spent` between requests to measure one.
 */
export function recordingRateLimits(): { rateLimits: RateLimitSettings; spent: RateSpend[] } {
  const inner = memoryRateBuckets()
  const spent: RateSpend[] = []
  const recording: RateBuckets = {
    takeHeld(key, policy, cost, now) {
      spent.push({ bucket: key.slice(0, key.indexOf(':')), tokens: cost })
      return inner.takeHeld?.(key, policy, cost, now)
    },
    take: (key, policy, cost, now) => inner.take(key, policy, cost, now),
  }
  const generous = Object.fromEntries(
    Object.keys(DEFAULT_RATE_POLICIES).map((name) => [name, { name, limit: 1e6, windowSeconds: 60 }]),
  )
  const limiter = rateLimiter(recording, { policies: generous })
  return { rateLimits: { limiter, trustedProxies: 0 }, spent }
}
