/** A rate-limit policy: at most `limit` requests in any `windowSeconds`, refilled smoothly (a token bucket). */
export type RatePolicy = { name: string; limit: number; windowSeconds: number }

/** What a bucket said about a request: whether it may go on, what is left, and when to come back. */
export type RateDecision = {
  allowed: boolean
  /** Requests that could still be made right now. */
  remaining: number
  /** Seconds until the bucket is full again. */
  resetSeconds: number
  /** Seconds to wait before this request would be allowed (0 when it is). */
  retryAfterSeconds: number
  /** The same wait in milliseconds, unrounded. */
  retryAfterMs: number
}

/**
 * Where token buckets live. Every process that shares one instance (a database) shares the limits; `take` must be
 * atomic across them.
 */
export interface RateBuckets {
  /** Spends `cost` tokens of the bucket `key` under `policy` at `nowMs`, or none when they are not all there. */
  take(key: string, policy: RatePolicy, cost: number, nowMs: number): Promise<RateDecision>
  /** `take` answered at once from this process's memory, when it can be; undefined: call `take`. */
  takeHeld?(key: string, policy: RatePolicy, cost: number, nowMs: number): RateDecision | undefined
}
