import { describe, expect, test } from 'bun:test'
import { StorageFullError, StoreUnavailableError } from './errors.ts'
import { problemResponse } from './http.ts'
import {
  addressBucket,
  fallbackRateBuckets,
  leasedRateBuckets,
  memoryRateBuckets,
  NETWORK_CEILING_FACTOR,
  networkBucket,
  type RateBuckets,
  RateLimitedError,
  rateLimiter,
} from './RateLimit.ts'
import { rateBucketsSuite } from './testing/rateBucketsSuite.ts'

rateBucketsSuite({ describe, test }, 'memoryRateBuckets', async () => memoryRateBuckets())
rateBucketsSuite({ describe, test }, 'leasedRateBuckets over memory', async () =>
  leasedRateBuckets(memoryRateBuckets()),
)

const T0 = Date.parse('2026-01-01T00:00:00.000Z')
const reads = { name: 'read', limit: 1200, windowSeconds: 60 }

/** Spends `count` tokens one by one through `buckets`; how many were allowed. */
async function spend(buckets: ReturnType<typeof leasedRateBuckets>, count: number, nowMs = T0) {
  let allowed = 0
  for (let i = 0; i < count; i++) if ((await buckets.take('k', reads, 1, nowMs)).allowed) allowed++
  return allowed
}

/** `buckets`, counting the takes that reach them. */
function countingBuckets(buckets: RateBuckets) {
  const counted = {
    takes: 0,
    take(...args: Parameters<RateBuckets['take']>) {
      counted.takes++
      return buckets.take(...args)
    },
  }
  return counted
}

describe('leasedRateBuckets', () => {
  test('behavior: two processes leasing from one shared bucket never grant more than its limit together', async () => {
    const shared = memoryRateBuckets()
    const counted = countingBuckets(shared)
    const first = leasedRateBuckets(counted)
    const second = leasedRateBuckets(counted)
    const granted = (await spend(first, 900)) + (await spend(second, 900))
    // Never more than the limit; fewer by at most what the first still holds of its last lease (at most 60).
    expect(granted).toBeLessThanOrEqual(1200)
    expect(granted).toBeGreaterThanOrEqual(1200 - 60)
    // A shared write per lease (60 tokens, fewer as the bucket runs low), plus the refusals that end the second's run.
    expect(counted.takes).toBeLessThan(80)
  })

  test('behavior: a refusal is repeated from memory until its Retry-After has passed', async () => {
    const shared = memoryRateBuckets()
    const counted = countingBuckets(shared)
    const leased = leasedRateBuckets(counted)
    const policy = { name: 'register', limit: 2, windowSeconds: 60 }
    for (let i = 0; i < 2; i++) expect((await leased.take('r', policy, 1, T0)).allowed).toBe(true)
    const refusal = await leased.take('r', policy, 1, T0)
    expect(refusal).toMatchObject({ allowed: false, retryAfterSeconds: 30 })
    const takesAfterRefusal = counted.takes
    const again = await leased.take('r', policy, 1, T0 + 10_000)
    expect(again).toMatchObject({ allowed: false, retryAfterSeconds: 20 })
    expect(counted.takes).toBe(takesAfterRefusal)
    expect((await leased.take('r', policy, 1, T0 + 30_000)).allowed).toBe(true)
  })
})

describe('fallbackRateBuckets', () => {
  /** A shared store that throws `fault` while `failing.on`, counting the takes that reach it. */
  function faultyShared(fault: Error) {
    const failing = { on: true }
    const counted = countingBuckets(memoryRateBuckets())
    const shared: RateBuckets = {
      take: (...args) => (failing.on ? Promise.reject(fault) : counted.take(...args)),
    }
    return { failing, counted, shared }
  }

  test('behavior: while the shared store is full or down the limit is kept by this process, and a bug is still thrown', async () => {
    for (const fault of [new StorageFullError(), new StoreUnavailableError('unchanged')]) {
      const { shared } = faultyShared(fault)
      const buckets = leasedRateBuckets(fallbackRateBuckets(shared))
      expect(await spend(buckets, 1300)).toBe(1200)
    }
    const bug = new TypeError('a bug')
    await expect(fallbackRateBuckets(faultyShared(bug).shared).take('k', reads, 1, T0)).rejects.toBe(bug)
  })

  test('behavior: after a fault the shared store is passed over for retryMs, then tried again', async () => {
    const { failing, counted, shared } = faultyShared(new StorageFullError())
    let clock = T0
    const buckets = fallbackRateBuckets(shared, { retryMs: 1000, now: () => clock })
    expect((await buckets.take('k', reads, 1, clock)).allowed).toBe(true)
    failing.on = false
    clock += 999
    expect((await buckets.take('k', reads, 1, clock)).allowed).toBe(true)
    expect(counted.takes).toBe(0)
    clock += 1
    expect((await buckets.take('k', reads, 1, clock)).allowed).toBe(true)
    expect(counted.takes).toBe(1)
  })
})

describe('rateLimiter', () => {
  test('behavior: a client address and an API key each have their own bucket per kind of request', async () => {
    let now = T0
    const limiter = rateLimiter(memoryRateBuckets(), { now: () => now })
    const check = async (...args: Parameters<typeof limiter.check>) => limiter.check(...args)
    for (let i = 0; i < 10; i++) await limiter.check('register', { address: '203.0.113.7' })
    await expect(check('register', { address: '203.0.113.7' })).rejects.toBeInstanceOf(RateLimitedError)
    await limiter.check('register', { address: '203.0.113.8' })
    await limiter.check('write', { address: '203.0.113.7' })
    // One key used from many addresses is still one bucket.
    for (let i = 0; i < 30; i++)
      await limiter.check('payment', { address: `198.51.100.${i}`, apiKey: 'amk_x' })
    await expect(check('payment', { address: '198.51.100.99', apiKey: 'amk_x' })).rejects.toThrow(
      'Too many payment requests',
    )
    now += 2_000
    await limiter.check('payment', { address: '198.51.100.99', apiKey: 'amk_x' })
  })

  test('behavior: a keyed request gets the tighter allowance at once from held tokens; a refused address spends no key token', () => {
    const limiter = rateLimiter(memoryRateBuckets(), { now: () => T0 })
    for (let i = 0; i < 5; i++) limiter.check('write', { address: '203.0.113.1', apiKey: 'amk_a' })
    // Held in memory: an answer, not a promise, and the key (6 spent) is tighter than the new address (1 spent).
    const answer = limiter.check('write', { address: '203.0.113.2', apiKey: 'amk_a' })
    expect(answer).not.toBeInstanceOf(Promise)
    expect((answer as { decision: { remaining: number } }).decision.remaining).toBe(120 - 6)
    for (let i = 0; i < 120; i++) limiter.check('write', { address: '203.0.113.3' })
    expect(() => limiter.check('write', { address: '203.0.113.3', apiKey: 'amk_b' })).toThrow(
      RateLimitedError,
    )
    const keyB = limiter.check('write', { address: '203.0.113.4', apiKey: 'amk_b' })
    expect((keyB as { decision: { remaining: number } }).decision.remaining).toBe(120 - 1)
  })

  test('behavior: a refusal is a 429 problem with Retry-After, RateLimit-Policy and RateLimit', async () => {
    const limiter = rateLimiter(memoryRateBuckets(), {
      now: () => T0,
      policies: { pairing: { name: 'pairing', limit: 1, windowSeconds: 900 } },
    })
    await limiter.check('pairing', { address: '192.0.2.1' })
    let error: unknown
    try {
      limiter.check('pairing', { address: '192.0.2.1' })
    } catch (caught) {
      error = caught
    }
    const response = problemResponse(
      error,
      new Request('http://x/api/community/users/u/pair-agent'),
      'http://x',
    )
    expect(response.status).toBe(429)
    expect(response.headers.get('content-type')).toBe('application/problem+json')
    expect(response.headers.get('retry-after')).toBe('900')
    expect(response.headers.get('ratelimit-policy')).toBe('"pairing";q=1;w=900')
    expect(response.headers.get('ratelimit')).toBe('"pairing";r=0;t=900')
    expect(await response.json()).toMatchObject({ status: 429, code: 'rate_limited' })
  })
})

describe('IPv6 networks', () => {
  test('attack: rotating through the /64s of one /48 gets at most the ceiling of 8 /64s, and another /48 is untouched', () => {
    const limiter = rateLimiter(memoryRateBuckets(), { now: () => T0 })
    let granted = 0
    let refusal: unknown
    // 65,536 /64s in a /48: without a ceiling each would get the pairing class's 10 guesses (655,360 per 15 min).
    for (let subnet = 0; subnet < 200; subnet++) {
      for (let i = 0; i < 10; i++) {
        try {
          limiter.check('pairing', { address: `2001:db8:7:${subnet.toString(16)}::${i + 1}` })
          granted++
        } catch (error) {
          refusal = error
        }
      }
    }
    expect(granted).toBe(10 * NETWORK_CEILING_FACTOR)
    expect(refusal).toBeInstanceOf(RateLimitedError)
    expect((refusal as RateLimitedError).headers['ratelimit-policy']).toBe('"pairing_network";q=80;w=900')
    expect(() => limiter.check('pairing', { address: '2001:db8:8::1' })).not.toThrow()
    // IPv4 (and IPv4-mapped) addresses have no wider ceiling.
    for (let i = 0; i < 50; i++)
      for (let j = 0; j < 10; j++) limiter.check('pairing', { address: `198.51.100.${i}` })
  })

  test("behavior: a /64's own refused requests do not spend its /48's ceiling", () => {
    const limiter = rateLimiter(memoryRateBuckets(), { now: () => T0 })
    for (let i = 0; i < 1000; i++)
      try {
        limiter.check('pairing', { address: '2001:db8:9:1::1' })
      } catch {}
    for (let subnet = 2; subnet < 2 + NETWORK_CEILING_FACTOR - 1; subnet++)
      for (let i = 0; i < 10; i++) limiter.check('pairing', { address: `2001:db8:9:${subnet}::1` })
  })

  test('behavior: networkBucket names an IPv6 address by its /48, and IPv4 by none', () => {
    expect(networkBucket('2001:db8:0:1:aaaa::1')).toBe('2001:db8:0::/48')
    expect(networkBucket('2001:DB8:ab:ffff::1')).toBe('2001:db8:ab::/48')
    expect(networkBucket('203.0.113.7')).toBeNull()
    expect(networkBucket('::ffff:203.0.113.7')).toBeNull()
  })
})

describe('addressBucket', () => {
  test('behavior: IPv4 stays itself, IPv4-mapped IPv6 is IPv4, IPv6 is counted by its /64', () => {
    expect(addressBucket('203.0.113.7')).toBe('203.0.113.7')
    expect(addressBucket('::ffff:203.0.113.7')).toBe('203.0.113.7')
    expect(addressBucket('2001:db8:0:1:aaaa::1')).toBe('2001:db8:0:1::/64')
    expect(addressBucket('2001:DB8:0:1:bbbb:cccc:dddd:eeee')).toBe('2001:db8:0:1::/64')
    expect(addressBucket('2001:db8::1')).toBe('2001:db8:0:0::/64')
    expect(addressBucket('::1')).toBe('0:0:0:0::/64')
  })
})

describe('leasedRateBuckets on a shared store that answers later (a database over the network)', () => {
  /** `buckets` whose every take answers after a few milliseconds, as PostgreSQL does. */
  const slow = (buckets: RateBuckets): RateBuckets & { takes: number } => {
    const counted = {
      takes: 0,
      async take(...args: Parameters<RateBuckets['take']>) {
        counted.takes++
        await Bun.sleep(2)
        return buckets.take(...args)
      },
    }
    return counted
  }
  const writes = { name: 'write', limit: 120, windowSeconds: 60 }

  test('behavior: 48 requests at once on one process all pass, by one refill at a time, not 48 leases', async () => {
    const shared = slow(memoryRateBuckets())
    const leased = leasedRateBuckets(shared)
    const answers = await Promise.all(Array.from({ length: 48 }, () => leased.take('key', writes, 1, T0)))
    expect(answers.filter((answer) => answer.allowed)).toHaveLength(48)
    expect(shared.takes).toBeLessThanOrEqual(48 / 6 + 1)
  })

  test('behavior: three processes in turn grant exactly the limit: leases shrink to one token as the bucket runs low', async () => {
    const shared = slow(memoryRateBuckets())
    const processes = [leasedRateBuckets(shared), leasedRateBuckets(shared), leasedRateBuckets(shared)]
    const answers = []
    for (let index = 0; index < 130; index++)
      answers.push(await processes[index % 3]?.take('key', writes, 1, T0))
    expect(answers.slice(0, 120).every((answer) => answer?.allowed)).toBe(true)
    expect(answers.slice(120).some((answer) => answer?.allowed)).toBe(false)
  })
})
