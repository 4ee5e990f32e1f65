import { strictEqual as equal, ok } from 'node:assert/strict'
import type { RateBuckets, RatePolicy } from '../ports/RateBuckets.ts'
import type { TestRunner } from './storeSuite.ts'

const T0 = Date.parse('2026-01-01T00:00:00.000Z')
const perMinute = (limit: number): RatePolicy => ({ name: 'test', limit, windowSeconds: 60 })

/** Takes `count` single tokens in turn; how many were allowed. */
async function allowedOf(buckets: RateBuckets, key: string, policy: RatePolicy, count: number, nowMs = T0) {
  let allowed = 0
  for (let i = 0; i < count; i++) if ((await buckets.take(key, policy, 1, nowMs)).allowed) allowed++
  return allowed
}

/**
 * The behaviour every RateBuckets implementation must show: a full bucket holds `limit` tokens, refills smoothly,
 * keeps keys apart, spends nothing when it refuses, and stays exact when many takes race.
 * @example rateBucketsSuite({ describe, test }, 'memory', async () => memoryRateBuckets())
 */
export function rateBucketsSuite(runner: TestRunner, name: string, make: () => Promise<RateBuckets>): void {
  const { describe, test } = runner
  describe(`RateBuckets conformance: ${name}`, () => {
    test('behavior: a new bucket allows exactly its limit, then refuses with a Retry-After', async () => {
      const buckets = await make()
      equal(await allowedOf(buckets, 'a', perMinute(5), 8), 5)
      const refused = await buckets.take('a', perMinute(5), 1, T0)
      equal(refused.allowed, false)
      equal(refused.remaining, 0)
      equal(refused.retryAfterSeconds, 12)
    })

    test('behavior: tokens come back one interval at a time, never beyond the limit', async () => {
      const buckets = await make()
      const policy = perMinute(6)
      equal(await allowedOf(buckets, 'b', policy, 6), 6)
      equal((await buckets.take('b', policy, 1, T0 + 9_999)).allowed, false)
      const back = await buckets.take('b', policy, 1, T0 + 10_000)
      ok(back.allowed)
      equal(back.remaining, 0)
      equal(await allowedOf(buckets, 'b', policy, 10, T0 + 3_600_000), 6)
    })

    test('behavior: keys are separate buckets', async () => {
      const buckets = await make()
      equal(await allowedOf(buckets, 'c1', perMinute(2), 3), 2)
      equal(await allowedOf(buckets, 'c2', perMinute(2), 3), 2)
    })

    test('behavior: a take of several tokens is all or nothing, and a refusal spends nothing', async () => {
      const buckets = await make()
      const policy = perMinute(10)
      ok((await buckets.take('d', policy, 7, T0)).allowed)
      const refused = await buckets.take('d', policy, 4, T0)
      equal(refused.allowed, false)
      equal(refused.remaining, 3)
      const rest = await buckets.take('d', policy, 3, T0)
      ok(rest.allowed)
      equal(rest.remaining, 0)
    })

    test('behavior: racing takes never grant more than the limit', async () => {
      const buckets = await make()
      const answers = await Promise.all(
        Array.from({ length: 50 }, () => buckets.take('e', perMinute(20), 1, T0)),
      )
      equal(answers.filter((answer) => answer.allowed).length, 20)
    })
  })
}
