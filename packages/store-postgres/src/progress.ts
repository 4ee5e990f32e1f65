// How a deadline tells a database that is down from one that is only busy, shared by the calls sent (faults.ts) and
// the calls waiting for a turn to be sent (admission.ts): both give up when no call of the database completed in
// their window, and wait on while calls keep completing.

/** A timer port, so a test can count which path answered (the deadline or the call) without a wall clock. */
export type DeadlineTimer = {
  /** Calls `fire` after `ms` unless cancelled. */
  start(ms: number, fire: () => void): () => void
  /** Milliseconds on a monotonic clock (the process's when absent). */
  now?(): number
}

/** The process's timers. */
export const systemTimer: DeadlineTimer = {
  start(ms, fire) {
    const timer = setTimeout(fire, ms)
    return () => clearTimeout(timer)
  },
  now: () => performance.now(),
}

/**
 * Calls completed on one database (its store and its rate buckets share it), so a deadline can tell a database that
 * is down (no call completes) from one that is only busy (calls complete, this one waits its turn). Counted, not
 * timed. `down` is set when a window passed with no call completed or a call found no database there, and cleared by
 * the next call that completes; while it is set one call at a time (`probing`) is sent to find out, and the others
 * answer at once, and no window gets an extension.
 */
export type Progress = { completed: number; down?: boolean; probing?: boolean }

const progressByDatabase = new WeakMap<object, Progress>()

/**
 * The one Progress of `database` (the store and the rate buckets of one pool must share it: a database found down by
 * one is down for the other), made on first use.
 */
export function progressOf(database: object): Progress {
  let progress = progressByDatabase.get(database)
  if (!progress) {
    progress = { completed: 0 }
    progressByDatabase.set(database, progress)
  }
  return progress
}

/** Counts a call of the database completed: it is there. */
export function completed(progress: Progress): void {
  progress.completed++
  progress.down = false
}

/**
 * An extension is this fraction of the deadline: a database that stops answering just after other calls completed is
 * found down within a quarter deadline more (a whole one more answered up to two deadlines, 3-4.7 s, seen at the
 * start of a freeze by the second attack of issue 39), while a busy one is still waited on.
 */
export const EXTENSION_PART = 4

/** How many extensions a wait gets while other calls keep completing: at most 20 × the deadline in all. */
const EXTENSIONS_WHILE_PROGRESSING = 20 * EXTENSION_PART

/**
 * Calls `giveUp` once `first` ms pass with no call of the database completed in that time, or, after that, a quarter
 * of `ms` (at most 20 deadlines in all); answers the cancel. While calls complete, the database is busy, not gone:
 * a call sent is waited on (giving up would shed answers, not work: its statement still runs). A request's call
 * waiting for a turn also gives up at `hardMs` whatever completes: it is answered within its request's bound, 503
 * unsent, when the database could not take it in time (a pool exhausted, the backlog of an outage).
 */
export function patience(
  progress: Progress,
  { ms, first, hardMs }: { ms: number; first: number; hardMs?: number },
  timer: DeadlineTimer,
  giveUp: () => void,
): () => void {
  let seen = progress.completed
  let extensions = 0
  let cancel = () => {}
  const arm = (window: number) => {
    cancel = timer.start(window, () => {
      // Calls completing say the database is busy, not gone, unless another call could get no connection meanwhile
      // (a database shutting down finishes some statements while it refuses new connections).
      const idle = progress.completed === seen || progress.down === true
      if (idle) progress.down = true
      if (idle || extensions >= EXTENSIONS_WHILE_PROGRESSING) return giveUp()
      seen = progress.completed
      extensions++
      arm(ms / EXTENSION_PART)
    })
  }
  arm(first)
  const cancelHard = hardMs === undefined || hardMs <= 0 ? () => {} : timer.start(hardMs, giveUp)
  return () => {
    cancel()
    cancelHard()
  }
}
