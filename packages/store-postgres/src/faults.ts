import { type Store, StoreUnavailableError } from '@agentmarket/core'
import { STORE_READ_METHODS } from '@agentmarket/core/rows'
import { type Admission, admit, countWait, requestWait } from './admission.ts'
import {
  completed,
  type DeadlineTimer,
  EXTENSION_PART,
  type Progress,
  patience,
  systemTimer,
} from './progress.ts'

/**
 * Faults after which nothing changed: met before a statement could reach the database (no connection could be had),
 * or a statement that waited past the pool's lock_timeout for a lock (lock_not_available 55P03: it did nothing, and its
 * transaction rolls back). Node's socket codes, postgres.js's CONNECT_TIMEOUT and CONNECTION_ENDED (the pool is
 * closing), and PostgreSQL's cannot_connect_now (57P03, starting up or shutting down) and too_many_connections (53300).
 */
const NEVER_SENT = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'CONNECT_TIMEOUT',
  'CONNECTION_ENDED',
  '57P03',
  '53300',
  '55P03',
])

/**
 * Of those, the ones that say the database is not there at all (refused, no such host, no route, or PostgreSQL
 * starting up or shutting down), as opposed to a busy one: a connection that timed out or a full connection table
 * (53300) happen under load too, and must not make every other call answer 503.
 */
const NOT_THERE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', '57P03'])

/**
 * Faults met on a connection that may have carried a statement: the connection closed or was reset, the server shut
 * down (admin_shutdown 57P01, crash_shutdown 57P02), any connection exception (class 08), or the statement timed out
 * (query_canceled 57014, statement_timeout). A write that met one may have committed.
 */
const MAYBE_SENT = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  '57P01',
  '57P02',
  '57014',
])

/** The error and its causes, outermost first (drizzle wraps the driver's error in a DrizzleQueryError). */
function* causes(error: unknown): Generator<unknown> {
  for (let at = error, depth = 0; at !== undefined && at !== null && depth < 5; depth++) {
    yield at
    at = (at as { cause?: unknown }).cause
  }
}

/** The driver's code in `error` or its causes, when one is a known dependency fault. */
function faultCode(error: unknown): { code: string; sent: boolean } | null {
  for (const at of causes(error)) {
    const code = (at as { code?: unknown }).code
    if (typeof code !== 'string') continue
    if (NEVER_SENT.has(code)) return { code, sent: false }
    if (MAYBE_SENT.has(code) || code.startsWith('08')) return { code, sent: true }
  }
  return null
}

/**
 * A PostgreSQL dependency fault as the store's answer: StoreUnavailableError('unchanged') when no statement could
 * have reached the database or the call only read, StoreUnavailableError('unknown') when a write may have landed;
 * null for anything else (a bug stays a bug: a 500).
 * @example const fault = classifyPostgresFault(error, { wrote: true }); if (fault) throw fault
 */
export function classifyPostgresFault(
  error: unknown,
  { wrote }: { wrote: boolean },
): StoreUnavailableError | null {
  if (error instanceof StoreUnavailableError) return error
  const fault = faultCode(error)
  if (!fault) return null
  return new StoreUnavailableError(wrote && fault.sent ? 'unknown' : 'unchanged', { cause: error })
}

/** How long each kind of call may take before the store answers 503 (the statement may still end later). */
export type CallDeadlines = {
  /** A request's reads and writes. */
  requestMs: number
  /** The searches: the agents' list, its text match, the users' list, the paid offers. */
  searchMs: number
  /** The background passes' claims, settlements and sweeps. */
  backgroundMs: number
}

/** The Store methods that search (read many rows by filters and text). */
const SEARCH_METHODS: ReadonlySet<string> = new Set([
  'listAgents',
  'syncAgents',
  'listUsers',
  'listPaidOffers',
  'findSkillSellers',
])

/** The Store methods only the background passes call (re-checks, outbox, webhooks, expiry). */
const BACKGROUND_METHODS: ReadonlySet<string> = new Set([
  'claimDueRechecks',
  'listDueRechecks',
  'listDueJobs',
  'countPendingChecks',
  'expireTasks',
  'claimDueMail',
  'settleMail',
  'enqueueDeliveries',
  'claimDueDeliveries',
  'settleDelivery',
])

/** Methods that never get a deadline: closing, the change version (no round trip), the live feed's subscription. */
const UNBOUNDED = new Set(['close', 'changeVersion', 'watchEvents'])

/** The deadline of method `name` under `deadlines`. */
export function deadlineOf(name: string, deadlines: CallDeadlines): number {
  if (SEARCH_METHODS.has(name)) return deadlines.searchMs
  if (BACKGROUND_METHODS.has(name)) return deadlines.backgroundMs
  return deadlines.requestMs
}

/**
 * Runs `call`, failing with `onLate()`'s error when the database's patience with it ends (progress.ts: `first` ms with
 * no other call completed, then a quarter of `ms` at a time while calls complete); the call itself runs on, unobserved.
 */
function withDeadline<T>(
  call: Promise<T>,
  windows: { ms: number; first: number },
  timer: DeadlineTimer,
  onLate: () => Error,
  progress: Progress,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const cancel = patience(progress, windows, timer, () => reject(onLate()))
    call.then(
      (value) => {
        cancel()
        completed(progress)
        resolve(value)
      },
      (error) => {
        cancel()
        reject(error)
      },
    )
  })
}

/** What bounds one call: its kind's deadline, whether it writes, and what it shares with the database's other calls. */
export type CallLimits = {
  ms: number
  wrote: boolean
  timer?: DeadlineTimer
  progress?: Progress
  /** The database's turns (admission.ts); without one the call is sent at once. */
  admission?: Admission
  /** How long a call given up keeps its turn at most while its statement runs on (the statement's timeout). */
  holdMs?: number
}

/**
 * Runs `call` within `ms` (extended while other calls sharing `progress` complete), its dependency faults as
 * StoreUnavailableError (classifyPostgresFault); past its deadline it fails with StoreUnavailableError, 'unknown'
 * when `wrote` (the statement may still commit), else 'unchanged'. While the database is known to be down, a call
 * is not sent (503 `database_unavailable` at once: nothing changed) unless it is the one call finding out whether it
 * is back (never a call of a request that has waited its bound). A call is sent only when the admission gives it a
 * turn, and a request waits `ms` on the database in all, across its calls and whatever completes meanwhile
 * (admission.ts): a call still in line then answers 503 unsent; a call sent is given up after a window (a quarter of
 * `ms` at least) in which no call of the database completed.
 * @example await boundedCall(() => sql`select 1`, { ms: 1500, wrote: false })
 */
export async function boundedCall<T>(call: () => Promise<T>, limits: CallLimits): Promise<T> {
  const progress = limits.progress
  if (!progress?.down) return admittedCall(call, limits)
  // A request that has waited its bound already is answered now rather than made the one to find out (a probe waits
  // a window more: seen, a 503 after 2.5 s, its last two calls each probing a database still down).
  if (progress.probing || requestWait(limits.ms).left <= 0) throw new StoreUnavailableError('unchanged')
  progress.probing = true
  try {
    return await admittedCall(call, limits)
  } finally {
    progress.probing = false
  }
}

/**
 * `call` sent once the admission lets it, within what its request may still wait; its turn is given back when its
 * statement ends, even after its caller gave it up (at most `holdMs` later), and the time it took counts on the request.
 */
async function admittedCall<T>(call: () => Promise<T>, limits: CallLimits): Promise<T> {
  const timer = limits.timer ?? systemTimer
  const now = () => timer.now?.() ?? performance.now()
  const progress = limits.progress ?? { completed: 0 }
  const began = now()
  const { left, inRequest, first: firstCall } = requestWait(limits.ms)
  // A window is never shorter than an extension: a short one could not tell a stopped database from a busy one.
  const windowOf = (spent: number) => Math.min(limits.ms, Math.max(left - spent, limits.ms / EXTENSION_PART))
  let release = () => {}
  let running: Promise<T> | undefined
  let over = false
  const ended = () => {
    over = true
  }
  try {
    // A request's call waits for a turn until the request has waited its bound in all, whatever completes meanwhile:
    // a pool exhausted or the backlog just after an outage is answered 503 unsent within the bound, not served seconds
    // late. A call once sent is waited on while calls complete: giving it up would not stop its statement, and a write
    // given up is an unknown outcome its client must untangle (tried: six times the read-backs, recovery 6.6 s).
    const inLine = { ms: limits.ms, first: windowOf(0), ...(inRequest ? { hardMs: left } : {}) }
    const turn = limits.admission
      ? admit(limits.admission, began + left, inLine, timer, progress, firstCall)
      : release
    release = typeof turn === 'function' ? turn : await turn
    const first = windowOf(typeof turn === 'function' ? 0 : now() - began)
    const watched = () => {
      running = call()
      running.then(ended, ended)
      return running
    }
    return await sentCall(watched, { ...limits, first, timer, progress })
  } finally {
    if (running && !over) holdTurn(running, release, limits.holdMs ?? HOLD_DEADLINES * limits.ms, timer)
    else release()
    countWait(now() - began)
  }
}

/** How many deadlines a given-up call keeps its turn at most when no store says (its statement's timeout). */
const HOLD_DEADLINES = 10

/**
 * Gives `release` back once `running` ends, or `holdMs` from now if it never does (a connection gone silent). A
 * statement given up still runs on its connection: were its turn given back at once, the next call would be queued
 * by the driver behind it (postgres.js pipelines onto busy connections), sent when the slow one ends however late, and
 * under load the driver's queue grew until no call completed in a window and the node shed everything (two CI runs at
 * once: 3 to 27 of about 1,950 requests a node answered in the crash test).
 */
function holdTurn(running: Promise<unknown>, release: () => void, holdMs: number, timer: DeadlineTimer) {
  const cancel = timer.start(holdMs, release)
  const done = () => {
    cancel()
    release()
  }
  running.then(done, done)
}

/** `call` sent to the database, bounded as `boundedCall` says: `first` is its first window without progress. */
async function sentCall<T>(
  call: () => Promise<T>,
  {
    ms,
    first,
    wrote,
    timer,
    progress = { completed: 0 },
  }: { ms: number; first: number; wrote: boolean; timer: DeadlineTimer; progress?: Progress },
): Promise<T> {
  try {
    return await withDeadline(
      call(),
      { ms, first },
      timer,
      () => new StoreUnavailableError(wrote ? 'unknown' : 'unchanged'),
      progress,
    )
  } catch (error) {
    // The database is not there (refused, starting up, shutting down): it is down for every call, as when a deadline
    // passed with nothing completed, so the request's next calls do not each wait to find out.
    if (NOT_THERE.has(faultCode(error)?.code ?? '')) progress.down = true
    throw classifyPostgresFault(error, { wrote }) ?? error
  }
}

/**
 * `store` whose every method answers within its kind's deadline and turns PostgreSQL's dependency faults into
 * StoreUnavailableError (boundedCall), so a request never hangs on a database that is down, restarting or out of
 * connections, and never answers 500 for it.
 * @example const bounded = boundedStore(store, { requestMs: 1500, searchMs: 1500, backgroundMs: 10_000 })
 */
export function boundedStore(
  store: Store,
  deadlines: CallDeadlines,
  timer: DeadlineTimer = systemTimer,
  progress: Progress = { completed: 0 },
  admission?: Admission,
): Store {
  const wrapped = { ...store }
  // The server's statement timeout is the longest deadline (database.ts): by then a live database ended the statement.
  const holdMs = Math.max(deadlines.requestMs, deadlines.searchMs, deadlines.backgroundMs)
  for (const [name, method] of Object.entries(store) as [string, unknown][]) {
    if (typeof method !== 'function' || UNBOUNDED.has(name)) continue
    const limits: CallLimits = {
      ms: deadlineOf(name, deadlines),
      wrote: !STORE_READ_METHODS.has(name),
      timer,
      progress,
      holdMs,
      ...(admission ? { admission } : {}),
    }
    const run = method as (...values: unknown[]) => Promise<unknown>
    Object.assign(wrapped, {
      [name]: (...args: unknown[]) => boundedCall(() => run.apply(store, args), limits),
    })
  }
  return wrapped
}
