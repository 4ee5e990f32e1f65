import { currentRequest, StoreUnavailableError } from '@agentmarket/core'
import { type DeadlineTimer, type Progress, patience } from './progress.ts'

// A pool of N connections serves N statements at once; the driver queues the rest, and a queued statement is still
// sent once a connection frees, however late, even after its caller was answered 503. So calls take a turn here
// before the driver sees them: at most one per connection is sent, the others wait in line. A call given up while it
// waits (the database stopped completing calls) answers 503 unsent: nothing changed, and no work is left in the
// database to be done late. The line is ordered by deadline, so a request already under way (its deadline is its
// start's) goes before one that just came, and background passes go last. Requests that just came (their first call)
// are served first come, first served until the line stands: once the oldest of them has waited a quarter of a
// deadline, a new one goes before them (adaptive LIFO). Under overload first-come ordering serves every request
// late, each waiting out the whole backlog, so all are shed at their bound and none is answered (seen: two CI runs
// at once, 182 of 185 paying requests 503); newest-first answers the requests a node can serve within their bound
// and sheds the rest, which would have missed it anyway.

/** One waiting call: when it gives up, whether it is its request's first, since when it waits, how it is let in. */
type Waiter = { deadline: number; fresh: boolean; since: number; admit: () => void }

/** The turns of one database: how many calls may be out at once, how many are, and who waits, earliest deadline first. */
export type Admission = { slots: number; out: number; waiting: Waiter[] }

const admissions = new WeakMap<object, Admission>()

/**
 * The one Admission of `database` (its store and its rate buckets share the pool, so they share the turns), made on
 * first use with `slots` turns (the pool's size).
 */
export function admissionOf(database: object, slots: number): Admission {
  let admission = admissions.get(database)
  if (!admission) {
    admission = { slots: Math.max(1, slots), out: 0, waiting: [] }
    admissions.set(database, admission)
  }
  return admission
}

/** A release that counts once, however often it is called (at the call's end and at its deadline). */
function releaser(admission: Admission): () => void {
  let released = false
  return () => {
    if (released) return
    released = true
    admission.out--
    admission.waiting.shift()?.admit()
  }
}

/** The line stands when a request's first call has waited this fraction of a deadline: new first calls then go first. */
export const STANDING_PART = 4

/**
 * Where `waiter` joins the line: before the first call with a later deadline; a request's first call while the line
 * stands goes before the other first calls (they have waited long already; it can still be answered in time).
 */
function placeOf(waiting: Waiter[], waiter: Waiter, standingMs: number): number {
  const standing =
    waiter.fresh && waiting.some((other) => other.fresh && waiter.since - other.since >= standingMs)
  const at = waiting.findIndex((other) => other.deadline > waiter.deadline || (standing && other.fresh))
  return at === -1 ? waiting.length : at
}

/**
 * A turn to send one call: the release at once while a turn is free and no one waits (no tick lost), else a promise
 * of it once the call's turn comes in line, ordered by `deadline` (on the timer's clock), a request's `fresh` first
 * call newest-first while the line stands (placeOf). The release is to be called
 * when the call ends or is given up. A call waits in line as a sent call waits for its answer (progress.ts): given up
 * when `windows.first` ms pass with no call of the database completed, waited on while calls keep completing, and
 * given up at `windows.hardMs` (a request's call) whatever completes: a pool exhausted answers the request within its
 * bound. Given up, it rejects with 503 `database_unavailable` (nothing was sent).
 * @example const turn = admit(admission, deadline, { first: 1500, ms: 1500, hardMs: 1500 }, timer, progress)
 */
export function admit(
  admission: Admission,
  deadline: number,
  windows: { first: number; ms: number; hardMs?: number },
  timer: DeadlineTimer,
  progress: Progress,
  fresh = false,
): (() => void) | Promise<() => void> {
  if (admission.out < admission.slots && admission.waiting.length === 0) {
    admission.out++
    return releaser(admission)
  }
  if (windows.hardMs !== undefined && windows.hardMs <= 0)
    return Promise.reject(new StoreUnavailableError('unchanged'))
  return new Promise((resolve, reject) => {
    const waiter: Waiter = {
      deadline,
      fresh,
      since: timer.now?.() ?? performance.now(),
      admit: () => {
        cancel()
        admission.out++
        resolve(releaser(admission))
      },
    }
    admission.waiting.splice(placeOf(admission.waiting, waiter, windows.ms / STANDING_PART), 0, waiter)
    const cancel = patience(progress, windows, timer, () => {
      cancel()
      const at = admission.waiting.indexOf(waiter)
      if (at === -1) return // let in already: a timer that could not be cancelled
      admission.waiting.splice(at, 1)
      reject(new StoreUnavailableError('unchanged'))
    })
  })
}

/** What each request has waited on the database so far, across its calls (admission and answer). */
const waitedByRequest = new WeakMap<object, number>()

/** What the request making a call may still wait on the database, and whether this is its first call. */
export type RequestWait = {
  /** Of the bound, what is left (all of it outside a request). */
  left: number
  /** Whether a request makes the call (one made outside a request, a background pass, has no bound of its own). */
  inRequest: boolean
  /** Whether this is the first call its request makes of the database (a call outside a request is not). */
  first: boolean
}

/**
 * Of `ms`, what the request making this call may still wait on the database, looked up once: a request making several
 * calls waits one bound in all, not one per call.
 * @example const { left, first } = requestWait(1200)
 */
export function requestWait(ms: number): RequestWait {
  const request = currentRequest()
  if (!request) return { left: ms, inRequest: false, first: false }
  const waited = waitedByRequest.get(request)
  return { left: ms - (waited ?? 0), inRequest: true, first: waited === undefined }
}

/** Counts `ms` more waited on the database by the request making this call. */
export function countWait(ms: number): void {
  const request = currentRequest()
  if (request) waitedByRequest.set(request, (waitedByRequest.get(request) ?? 0) + ms)
}
