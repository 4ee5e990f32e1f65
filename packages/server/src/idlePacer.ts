/** A background pass on a timer that slows down while it finds nothing to do. */
export type IdlePacer = {
  /** Returns to the busy pace: the next pass runs within `busyMs` (never sooner than it would have: no storm of passes). */
  wake(): void
  /** Stops the timer; a pass in progress finishes on its own. */
  stop(): void
}

/**
 * Runs `pass` every `busyMs` while it reports work; each pass that reports none doubles the wait, up to `idleMaxMs`,
 * so a market at rest polls its store a few times a minute instead of several times a second. Passes do not wait
 * for each other (the next one is timed when one starts), as with setInterval; a pass that throws counts as work.
 * @example const pacer = idlePacer(async () => (await sendDue()) > 0, { busyMs: 250, idleMaxMs: 2_000 })
 */
export function idlePacer(
  pass: () => Promise<boolean>,
  { busyMs, idleMaxMs }: { busyMs: number; idleMaxMs: number },
): IdlePacer {
  let waitMs = busyMs
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  let dueAt = 0
  const schedule = (ms: number) => {
    if (stopped) return
    clearTimeout(timer)
    dueAt = Date.now() + ms
    timer = setTimeout(fire, ms)
  }
  /** Back to the busy pace; the pass timed at the idle pace is brought forward. */
  const busy = () => {
    waitMs = busyMs
    if (dueAt - Date.now() > busyMs) schedule(busyMs)
  }
  function fire() {
    schedule(waitMs)
    pass().then((worked) => {
      if (worked) busy()
      else waitMs = Math.min(waitMs * 2, idleMaxMs)
    }, busy)
  }
  schedule(busyMs)
  return {
    wake: busy,
    stop() {
      stopped = true
      clearTimeout(timer)
    },
  }
}
