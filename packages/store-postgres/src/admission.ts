import { currentRequest, StoreUnavailableError } from '@agentmarket/core'

// A pool of N connections serves N statements at once; the driver queues the rest, and a queued statement is still
// sent once a connection frees, however late. After a restart the queue held 60-70 calls on one node and answers took
// 5-11 s (issue 39's chaos run). So calls take a turn here before the driver sees them: at most one per connection is
// sent, the others wait in line, and a call whose deadline passes while it waits answers 503 unsent (nothing
// changed, no work left behind in the database). The line is ordered by deadline, so a request already under way
// (its deadline is its start's) finishes before one that just came, and background passes go last.

/** A clock and timers: the process's, or a test's. */
export type AdmissionClock = {
  /** Milliseconds on a monotonic clock. */
  now(): number
  /** Calls `fire` after `ms` unless cancelled. */
  start(ms: number, fire: () => void): () => void
}

/** One waiting call: when it gives up, and how it is let in. */
type Waiter = { deadline: number; admit: () => void }

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

/**
 * A turn to send one call: the release at once while a turn is free and no one waits (no tick lost), else a promise
 * of it once the call's turn comes in line by `deadline` (on `clock`). The release is to be called when the call ends
 * or is given up. The promise rejects with 503 `database_unavailable` (nothing was sent) when the deadline comes first.
 * @example const turn = admit(admission, clock.now() + 1500, clock); const release = typeof turn === 'function' ? turn : await turn
 */
export function admit(
  admission: Admission,
  deadline: number,
  clock: AdmissionClock,
): (() => void) | Promise<() => void> {
  if (admission.out < admission.slots && admission.waiting.length === 0) {
    admission.out++
    return releaser(admission)
  }
  return new Promise((resolve, reject) => {
    const waiter: Waiter = {
      deadline,
      admit: () => {
        cancel()
        admission.out++
        resolve(releaser(admission))
      },
    }
    const at = admission.waiting.findIndex((other) => other.deadline > deadline)
    admission.waiting.splice(at === -1 ? admission.waiting.length : at, 0, waiter)
    const cancel = clock.start(Math.max(0, deadline - clock.now()), () => {
      const at = admission.waiting.indexOf(waiter)
      if (at === -1) return // let in already: a timer that could not be cancelled
      admission.waiting.splice(at, 1)
      reject(new StoreUnavailableError('unchanged'))
    })
  })
}

/** What each request has waited on the database so far, across its calls (admission and answer). */
const waitedByRequest = new WeakMap<object, number>()

/**
 * Of `ms`, what the request making this call may still wait on the database (all of it outside a request): a request
 * making several calls waits one bound in all, not one per call.
 */
export function waitLeft(ms: number): number {
  const request = currentRequest()
  return request ? ms - (waitedByRequest.get(request) ?? 0) : ms
}

/** Counts `ms` more waited on the database by the request making this call. */
export function countWait(ms: number): void {
  const request = currentRequest()
  if (request) waitedByRequest.set(request, (waitedByRequest.get(request) ?? 0) + ms)
}
