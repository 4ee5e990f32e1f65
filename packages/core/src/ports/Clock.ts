/** Source of the current time, injected so liveness and expiry are testable. */
export type Clock = {
  /** The current instant. */
  now(): Date
}

/** The real wall clock. */
export function systemClock(): Clock {
  return { now: () => new Date() }
}

/** A clock that stands still until moved: for tests. */
export function manualClock(
  start: Date | string,
): Clock & { set(at: Date | string): void; advance(ms: number): void } {
  let current = new Date(start)
  return {
    now: () => new Date(current),
    set(at) {
      current = new Date(at)
    },
    advance(ms) {
      current = new Date(current.getTime() + ms)
    },
  }
}
