import { hashSecret } from './Credentials.ts'
import { MarketError, StorageFullError, StoreUnavailableError } from './errors.ts'
import type { RateBuckets, RateDecision, RatePolicy } from './ports/RateBuckets.ts'

export type { RateBuckets, RateDecision, RatePolicy } from './ports/RateBuckets.ts'

/**
 * The kinds of request limited separately; each has its own buckets per client address and per API key. `mail` is an
 * order e-mail, limited per sending address and per sender; `mail_total` is every order e-mail together.
 */
export type RateClass =
  | 'read'
  | 'write'
  | 'register'
  | 'register_attempt'
  | 'pairing'
  | 'keys'
  | 'payment'
  | 'mail'
  | 'mail_total'

/**
 * The limits this project chose (SECURITY.md): reads are generous, other writes moderate, and the three requests an
 * attacker would repeat are strict: registering agents, guessing pairing codes, and making the server query the chain.
 */
export const DEFAULT_RATE_POLICIES: Readonly<Record<RateClass, RatePolicy>> = {
  read: { name: 'read', limit: 1200, windowSeconds: 60 },
  write: { name: 'write', limit: 120, windowSeconds: 60 },
  // Spent only by a registration that would create an agent (a valid body, a free name): trial and error is not.
  register: { name: 'register', limit: 10, windowSeconds: 3600 },
  // Every registration request, refused ones included: a newcomer's mistakes cost from this larger bucket.
  register_attempt: { name: 'register_attempt', limit: 60, windowSeconds: 3600 },
  pairing: { name: 'pairing', limit: 10, windowSeconds: 900 },
  // Rotating a key is rare (a leak, a schedule); a stolen key or proof must not churn keys, nor spend the buckets
  // registration and pairing need.
  keys: { name: 'keys', limit: 10, windowSeconds: 3600 },
  payment: { name: 'payment', limit: 30, windowSeconds: 60 },
  // A busy buyer orders a few times an hour; one mail provider's outbound address carries many buyers.
  mail: { name: 'mail', limit: 30, windowSeconds: 3600 },
  mail_total: { name: 'mail_total', limit: 600, windowSeconds: 3600 },
}

/** Milliseconds between two tokens of `policy`. */
const tokenInterval = (policy: RatePolicy) => (policy.windowSeconds * 1000) / policy.limit

/**
 * One step of a token bucket kept as a single number, its "theoretical arrival time" (GCRA): the bucket is full when
 * `tat <= now`, and each token moves it one interval later. Spends `cost` tokens if they are all there.
 * @example const { tat, decision } = spendTokens(stored, Date.now(), DEFAULT_RATE_POLICIES.write, 1)
 */
export function spendTokens(
  tat: number | null,
  nowMs: number,
  policy: RatePolicy,
  cost: number,
): { tat: number; decision: RateDecision } {
  const interval = tokenInterval(policy)
  const windowMs = policy.windowSeconds * 1000
  const start = Math.max(tat ?? nowMs, nowMs)
  const next = start + cost * interval
  const allowed = next - nowMs <= windowMs + 1e-6
  const after = allowed ? next : start
  return {
    tat: after,
    decision: {
      allowed,
      remaining: Math.max(0, Math.floor((windowMs - (after - nowMs)) / interval + 1e-9)),
      resetSeconds: Math.ceil((after - nowMs) / 1000),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((next - nowMs - windowMs) / 1000)),
      retryAfterMs: allowed ? 0 : next - nowMs - windowMs,
    },
  }
}

/** Buckets in this process's memory: for one process, embedding and tests. Full buckets are forgotten. */
export function memoryRateBuckets(): RateBuckets {
  const buckets = new Map<string, number>()
  let takes = 0
  const forgetFull = (nowMs: number) => {
    for (const [key, tat] of buckets) if (tat <= nowMs) buckets.delete(key)
  }
  const takeHeld = (key: string, policy: RatePolicy, cost: number, nowMs: number) => {
    if (++takes % 1024 === 0) forgetFull(nowMs)
    const { tat, decision } = spendTokens(buckets.get(key) ?? null, nowMs, policy, cost)
    buckets.set(key, tat)
    return decision
  }
  return {
    takeHeld,
    take: async (key, policy, cost, nowMs) => takeHeld(key, policy, cost, nowMs),
  }
}

/** What a process holds of a shared bucket: tokens already spent there, and a refusal it may repeat until it ends. */
type Lease = {
  tokens: number
  remaining: number
  expiresAt: number
  deniedUntil: number
  /** The refusal of a take of `cost` tokens: a take of as many or more is refused the same way. */
  refusal?: RateDecision & { cost: number }
}

/** A lease takes at most this share of what the shared bucket had left, so leases shrink as a bucket runs low. */
const LEASE_OF_REMAINING = 1 / 8

/**
 * Shared buckets (a database) spent in small leases: a process takes a few tokens at once and hands them out from
 * memory, and repeats a refusal locally until its Retry-After has passed. The shared bucket still bounds the total,
 * so several processes never grant more than the limit together; a lease costs one shared write per
 * `leaseFraction` of the limit instead of one per request. Requests that find no lease wait for one refill (never
 * one each, which would lease the bucket away in parallel), a new lease keeps what the old one had left, and once
 * a process leases at most LEASE_OF_REMAINING of what the shared bucket had left, down to what each request costs, so
 * leases shrink as a bucket runs low. Tokens another process leased and does not use can still refuse a request early,
 * by at most what those leases hold.
 */
export function leasedRateBuckets(
  shared: RateBuckets,
  { leaseFraction = 0.05, maxKeys = 50_000 } = {},
): RateBuckets {
  const leases = new Map<string, Lease>()
  const refilling = new Map<string, Promise<unknown>>()
  const forgetExpired = (nowMs: number) => {
    for (const [key, lease] of leases)
      if (lease.expiresAt <= nowMs && lease.deniedUntil <= nowMs) leases.delete(key)
    if (leases.size > maxKeys) leases.clear()
  }
  const refill = async (key: string, policy: RatePolicy, cost: number, nowMs: number) => {
    const old = leases.get(key)
    const left = old && old.expiresAt > nowMs ? old.tokens : 0
    const sharedLeft = old?.remaining ?? policy.limit
    const size = Math.max(
      cost,
      Math.min(Math.ceil(policy.limit * leaseFraction), Math.floor(sharedLeft * LEASE_OF_REMAINING)),
    )
    let decision = await shared.take(key, policy, size, nowMs)
    let granted = size
    if (!decision.allowed && size > cost) {
      decision = await shared.take(key, policy, cost, nowMs)
      granted = cost
    }
    const lease: Lease = decision.allowed
      ? {
          tokens: left + granted - cost,
          remaining: decision.remaining,
          expiresAt: nowMs + policy.windowSeconds * 1000,
          deniedUntil: 0,
        }
      : {
          tokens: left,
          remaining: 0,
          expiresAt: old?.expiresAt ?? 0,
          deniedUntil: nowMs + decision.retryAfterMs,
          refusal: { ...decision, cost },
        }
    if (leases.size >= maxKeys) forgetExpired(nowMs)
    leases.set(key, lease)
    return { ...decision, remaining: decision.remaining + lease.tokens }
  }
  const takeHeld = (key: string, _policy: RatePolicy, cost: number, nowMs: number) => {
    const lease = leases.get(key)
    if (lease?.refusal && lease.deniedUntil > nowMs && cost >= lease.refusal.cost) {
      const retryAfterMs = lease.deniedUntil - nowMs
      const { cost: _, ...refusal } = lease.refusal
      return { ...refusal, retryAfterMs, retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) }
    }
    if (!lease || lease.tokens < cost || lease.expiresAt <= nowMs) return undefined
    lease.tokens -= cost
    const remaining = lease.remaining + lease.tokens
    return { allowed: true, remaining, resetSeconds: 0, retryAfterSeconds: 0, retryAfterMs: 0 }
  }
  const take = async (
    key: string,
    policy: RatePolicy,
    cost: number,
    nowMs: number,
  ): Promise<RateDecision> => {
    for (;;) {
      const held = takeHeld(key, policy, cost, nowMs)
      if (held) return held
      const running = refilling.get(key)
      if (!running) break
      await running
    }
    const refilled = refill(key, policy, cost, nowMs)
    refilling.set(key, refilled)
    try {
      return await refilled
    } finally {
      refilling.delete(key)
    }
  }
  return { takeHeld, take }
}

/** How long a shared store that failed a take is passed over for this process's own buckets before it is tried again. */
const SHARED_RETRY_MS = 1_000

/**
 * Shared buckets that fall back to buckets in this process's memory while the shared store cannot take (a full disk,
 * a database that is down): a request is then limited by this process alone instead of failing with the store, so a
 * full disk still serves reads and an outage still answers quickly. The limit still holds: in a window a client gets
 * at most the limit from the local buckets besides what the shared ones gave, per process. After a fault the shared
 * store is passed over for `retryMs` (by `now`), then tried again. Any other error (a bug) is thrown.
 * @example const buckets = leasedRateBuckets(fallbackRateBuckets(libsqlRateBuckets(database)))
 */
export function fallbackRateBuckets(
  shared: RateBuckets,
  { local = memoryRateBuckets(), retryMs = SHARED_RETRY_MS, now = Date.now } = {},
): RateBuckets {
  let passedOverUntil = Number.NEGATIVE_INFINITY
  return {
    async take(key, policy, cost, nowMs) {
      if (now() < passedOverUntil) return local.take(key, policy, cost, nowMs)
      try {
        return await shared.take(key, policy, cost, nowMs)
      } catch (error) {
        if (!(error instanceof StorageFullError || error instanceof StoreUnavailableError)) throw error
        // From when the fault was known: a take that met a deadline started that long ago.
        passedOverUntil = now() + retryMs
        return local.take(key, policy, cost, nowMs)
      }
    },
  }
}

/** 429: too many requests of one kind from one client address or API key. */
export class RateLimitedError extends MarketError {
  override readonly name = 'RateLimitedError'
  constructor(
    readonly policy: RatePolicy,
    readonly decision: RateDecision,
  ) {
    super(
      'rate_limited',
      429,
      'Too many requests',
      `Too many ${policy.name} requests: at most ${policy.limit} per ${policy.windowSeconds} s. Retry after ${decision.retryAfterSeconds} s.`,
    )
  }

  /** Retry-After and the RateLimit headers of this refusal. */
  get headers(): Record<string, string> {
    return {
      'retry-after': String(this.decision.retryAfterSeconds),
      ...rateLimitHeaders(this.policy, this.decision),
    }
  }
}

/**
 * The `RateLimit-Policy` and `RateLimit` fields of draft-ietf-httpapi-ratelimit-headers (structured lists: quota
 * `q` per window `w` seconds; `r` left, `t` seconds until it is all back).
 */
export function rateLimitHeaders(policy: RatePolicy, decision: RateDecision): Record<string, string> {
  return {
    'ratelimit-policy': `"${policy.name}";q=${policy.limit};w=${policy.windowSeconds}`,
    ratelimit: `"${policy.name}";r=${decision.remaining};t=${decision.resetSeconds}`,
  }
}

/** The eight groups of an IPv6 address (no IPv4 tail), lower case without leading zeros. */
function ipv6Groups(address: string): string[] {
  const [head = '', tail = ''] = address.toLowerCase().split('::')
  const left = head ? head.split(':') : []
  const right = address.includes('::') && tail ? tail.split(':') : []
  const groups = address.includes('::')
    ? [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right]
    : left
  return groups.map((group) => group.replace(/^0+(?=.)/, ''))
}

const IPV4_MAPPED = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i

/** One client address as a bucket name: an IPv4-mapped address as IPv4, an IPv6 address by its /64 network. */
export function addressBucket(address: string): string {
  if (!address.includes(':')) return address
  const mapped = IPV4_MAPPED.exec(address)
  if (mapped?.[1]) return mapped[1]
  return `${ipv6Groups(address).slice(0, 4).join(':')}::/64`
}

/**
 * The wider network an address's bucket shares a ceiling with: an IPv6 address's /48 (what one site is usually
 * given, 65,536 /64s), or null for IPv4, whose addresses are scarce enough to limit one by one.
 */
export function networkBucket(address: string): string | null {
  if (!address.includes(':') || IPV4_MAPPED.test(address)) return null
  return `${ipv6Groups(address).slice(0, 3).join(':')}::/48`
}

/** How many /64s of one /48 may spend their whole allowance at once before the /48's ceiling refuses them all. */
export const NETWORK_CEILING_FACTOR = 8

/**
 * A digest naming a client by its rate-limit bucket (an IPv6 address by its /64, so rotating the low bits of one
 * network is one client), never the address itself; '' when the host names none.
 */
export function clientKeyOf(client: string | null | undefined): string {
  return client ? hashSecret(`client:${addressBucket(client)}`) : ''
}

/** Who is asking: the client address, and the API key when the request carries one. */
export type RateClient = { address: string; apiKey?: string | undefined }

/** The decision a limiter gave an allowed request, with the policy it was measured against. */
export type RateAllowance = { policy: RatePolicy; decision: RateDecision }

/** Settings of a rate limiter; every part has a default. */
export type RateLimiterOptions = {
  policies?: Partial<Record<RateClass, RatePolicy>>
  now?: () => number
  /**
   * A stable name for an API key's bucket, never the key itself (default: a SHA-256 prefix). A host may pass a
   * faster native hash: the name only has to keep keys apart.
   */
  keyBucket?: (apiKey: string) => string
}

/** Of two allowances of one request, the one with fewer requests left. */
const tighter = (address: RateAllowance, key: RateAllowance) =>
  key.decision.remaining < address.decision.remaining ? key : address

/**
 * A /64's decision, then (only when it allowed) its /48's ceiling, whose refusal is thrown naming the ceiling. The
 * /48's tokens are spent only by requests the /64 allowed, so one /64's refused flood does not lower its neighbours'.
 */
function bothNetworks(
  own: RateDecision | Promise<RateDecision>,
  ceiling: () => RateDecision | Promise<RateDecision>,
  ceilingPolicy: RatePolicy,
): RateDecision | Promise<RateDecision> {
  const refusedBy = (shared: RateDecision, decision: RateDecision) => {
    if (!shared.allowed) throw new RateLimitedError(ceilingPolicy, shared)
    return decision
  }
  const then = (decision: RateDecision) => {
    if (!decision.allowed) return decision
    const wide = ceiling()
    return wide instanceof Promise
      ? wide.then((shared) => refusedBy(shared, decision))
      : refusedBy(wide, decision)
  }
  return own instanceof Promise ? own.then(then) : then(own)
}

/** The allowance of an allowed decision; a RateLimitedError for a refusal. */
function allowance(policy: RatePolicy, decision: RateDecision): RateAllowance {
  if (!decision.allowed) throw new RateLimitedError(policy, decision)
  return { policy, decision }
}

/**
 * Per client address and per API key token buckets: `check` spends one token of each bucket the request falls in and
 * throws RateLimitedError (429) when one is empty.
 * @example const limiter = rateLimiter(memoryRateBuckets()); await limiter.check('register', { address })
 */
export function rateLimiter(buckets: RateBuckets, options: RateLimiterOptions = {}) {
  const policies = { ...DEFAULT_RATE_POLICIES, ...options.policies }
  const now = options.now ?? Date.now
  const keyBucket = options.keyBucket ?? ((apiKey: string) => hashSecret(apiKey).slice(0, 32))
  // An IPv6 client can use any of its /48's 65,536 /64s: the /48 shares a ceiling of a few /64s' allowance.
  const ceilings = Object.fromEntries(
    Object.entries(policies).map(([name, policy]) => [
      name,
      { ...policy, name: `${policy.name}_network`, limit: policy.limit * NETWORK_CEILING_FACTOR },
    ]),
  ) as Record<RateClass, RatePolicy>
  return {
    /**
     * Spends one token of the bucket `bucket` (a name the caller chooses, e.g. a sender's address) of `rateClass`:
     * the allowance, or a RateLimitedError. For limits that are not per client address or API key.
     */
    async spend(rateClass: RateClass, bucket: string): Promise<RateAllowance> {
      const policy = policies[rateClass]
      return allowance(policy, await buckets.take(`${rateClass}:n:${keyBucket(bucket)}`, policy, 1, now()))
    },
    /**
     * Spends one request of `rateClass` for `client` (`tokens` of it for a request whose work grows with what it asks):
     * the tighter of its allowances, or a RateLimitedError. It answers synchronously when this process holds the
     * tokens (the common case: no promise on the hot path).
     */
    check(rateClass: RateClass, client: RateClient, tokens = 1): RateAllowance | Promise<RateAllowance> {
      const policy = policies[rateClass]
      const at = now()
      const spend = (key: string, of = policy) =>
        buckets.takeHeld?.(key, of, tokens, at) ?? buckets.take(key, of, tokens, at)
      const network = networkBucket(client.address)
      const byAddress =
        network === null
          ? spend(`${rateClass}:a:${addressBucket(client.address)}`)
          : bothNetworks(
              spend(`${rateClass}:a:${addressBucket(client.address)}`),
              () => spend(`${rateClass}:w:${network}`, ceilings[rateClass]),
              ceilings[rateClass],
            )
      const { apiKey } = client
      if (apiKey === undefined)
        return byAddress instanceof Promise
          ? byAddress.then((decision) => allowance(policy, decision))
          : allowance(policy, byAddress)
      // The key's bucket is spent only once the address's allowed the request.
      const byKey = (address: RateAllowance) => {
        const key = spend(`${rateClass}:k:${keyBucket(apiKey)}`)
        return key instanceof Promise
          ? key.then((decision) => tighter(address, allowance(policy, decision)))
          : tighter(address, allowance(policy, key))
      }
      return byAddress instanceof Promise
        ? byAddress.then((decision) => byKey(allowance(policy, decision)))
        : byKey(allowance(policy, byAddress))
    },
  }
}

/** A rate limiter, as `rateLimiter` makes it. */
export type RateLimiter = ReturnType<typeof rateLimiter>
