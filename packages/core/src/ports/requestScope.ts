import { AsyncLocalStorage } from 'node:async_hooks'

// What one request keeps for the whole of it (how long it may still wait on the chain, whether a write of it may have
// landed, what it waited on the database) lives in one async-local scope, entered once per request: each
// AsyncLocalStorage.run costs every request, the public reads included, and each scope open is carried along by every
// await inside it (bench/CHANGES.md, issue 41). The chain budget (chainBudget.ts), the write count (writeScope.ts) and
// an MPP charge's task claim (MppReceipt.ts) are fields of it, set and read there; nothing is made for a part a request
// does not use.

/**
 * The scope of one request, or of work outside any request (`request` false): its chain budget, its write count and
 * its charge's task claim. Other layers key their own per-request facts by it (`currentRequest()`).
 */
export class RequestScope {
  /** The chain budget has run out: its timer fired, or a call found nothing left. */
  spent = false
  /** Resolves when the chain budget is spent; made by the first chain call that waits on it. */
  expiry: Promise<void> | null = null
  /** The one timer that spends the budget, made with `expiry`; cleared when the request ends. */
  timer: ReturnType<typeof setTimeout> | undefined = undefined
  /** The request's answer, once its work has started: a timer made later is cleared when it settles. */
  answer: Promise<unknown> | null = null
  /** A write scope is open: the store's writes are counted (writeScope.ts). */
  writing = false
  /** A write made in the open write scope may have landed. */
  wrote = false
  /** How many write scopes are open, nested (writeScope.ts): each closes at the depth it opened at. */
  writeDepth = 0
  /** The charge running claims its transfer by the task it records (MppReceipt.ts withTaskClaim). */
  taskClaim = false

  constructor(
    /** A request (its chain budget bounds its chain calls), or only writes counted outside any request. */
    readonly request: boolean,
    /** When the chain budget ends, on `now`'s clock. */
    readonly deadline: number,
    /** The clock the budget is measured on. */
    readonly now: () => number,
  ) {}
}

const scopes = new AsyncLocalStorage<RequestScope>()

/** A scope for work outside any request (a test, an embedding host calling an action): no chain budget of its own. */
export const scopeOutsideRequests = () => new RequestScope(false, Number.POSITIVE_INFINITY, Date.now)

/** The scope this call runs in (undefined outside any). */
export function currentScope(): RequestScope | undefined {
  return scopes.getStore()
}

/**
 * Runs `work` in `scope`; its promise is `work`'s own (no wrapper is made), a synchronous throw a rejection.
 * @example const answer = inScope(new RequestScope(true, deadline, now), () => row.call(market, call))
 */
export function inScope<T>(scope: RequestScope, work: () => Promise<T>): Promise<T> {
  try {
    const answer = scopes.run(scope, work)
    return answer instanceof Promise ? answer : Promise.resolve(answer)
  } catch (error) {
    return Promise.reject(error)
  }
}

/**
 * An object standing for the request making this call (null outside any request): other layers keep their
 * per-request facts in a WeakMap keyed by it (the PostgreSQL store counts a request's wait on the database across its
 * calls, store-postgres admission.ts).
 * @example const request = currentRequest(); if (request) waited.set(request, (waited.get(request) ?? 0) + ms)
 */
export function currentRequest(): object | null {
  const scope = scopes.getStore()
  return scope?.request ? scope : null
}

/**
 * Runs `work` outside any request's scope: background work a request sets going (a pass it wakes, endings it leaves
 * to write later) must not be counted, ordered, bounded or written as that request, which has long been answered by
 * then.
 * @example timer = setTimeout(() => outsideRequest(fire), ms)
 */
export function outsideRequest<T>(work: () => T): T {
  return scopes.exit(work)
}
