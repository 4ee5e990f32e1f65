import { ChainUnavailableError, type MarketplaceActions } from '@agentmarket/core'
import { idlePacer } from './idlePacer.ts'
import { fallbackLogger, type Logger } from './log.ts'
import { passFaults } from './passFaults.ts'

const EXPIRY_INTERVAL_MS = 10_000
/**
 * The longest wait between passes at rest (nothing re-checked, no job event): each idle pass doubles the wait from
 * `intervalMs` up to this, and any work or `wake()` brings it back. One second, the busy pace, so no back-off: a
 * pending payment's re-check is due 5 s after its order and must run then, and the pass cannot yet tell from the
 * store when the next check falls due (no such read), so backing off made re-checks up to 5 s late
 * (tests/security/unpaidTasks.test.ts, "a budget per client", failed in CI with 5 s).
 */
export const RECHECK_IDLE_MAX_MS = 1_000

/**
 * Runs the core's background re-check of payments sent at creation on a timer (every `intervalMs` while there is
 * work, backing off to RECHECK_IDLE_MAX_MS at rest, woken by `wake()`), one pass at a time, with the job
 * escrow's follower, and at most every 10 s the expiry of unpaid tasks and the jobs time decided (late, accepted by silence). Every server process may run it: marking a task paid is a compare-and-set, so
 * two passes never pay a task twice.
 * @example const rechecks = startPaymentRechecks(market, { intervalMs: 2_000 }); rechecks.stop()
 */
export function startPaymentRechecks(
  market: MarketplaceActions,
  {
    intervalMs,
    idleMaxMs = RECHECK_IDLE_MAX_MS,
    leaseMs,
    logger = fallbackLogger,
  }: { intervalMs: number; idleMaxMs?: number; leaseMs?: number; logger?: Logger },
) {
  let running: Promise<void> | null = null
  let expiredAt = 0
  // A database outage is told once per pass kind (passFaults), not as an error line every pass.
  const recheckFaults = passFaults(logger, 'payment re-check')
  const followerFaults = passFaults(logger, 'job escrow follower')
  const expiryFaults = passFaults(logger, 'task expiry')
  /** One pass; resolves to whether it found work (a fault counts: the store or chain is retried at the busy pace). */
  const pass = async (): Promise<boolean> => {
    let worked = false
    try {
      const { failure, checked } = await market.recheckPendingPayments(undefined, leaseMs)
      worked = checked > 0 || failure !== undefined
      // A chain outage is expected now and then (warn); anything behind it, or anything else, is a fault (error).
      if (failure instanceof ChainUnavailableError && failure.cause === undefined)
        logger.warn('payment re-check waits for the chain', { reason: failure.message })
      else if (failure !== undefined) recheckFaults.failed(failure)
      else recheckFaults.succeeded()
    } catch (error) {
      worked = true
      recheckFaults.failed(error)
    }
    try {
      const followed = await market.followJobEscrow()
      worked ||= followed.applied + followed.skipped > 0
      followerFaults.succeeded()
    } catch (error) {
      worked = true
      if (error instanceof ChainUnavailableError && error.cause === undefined)
        logger.warn('job escrow follower waits for the chain', { reason: error.message })
      else followerFaults.failed(error)
    }
    // Expiry is a write (one indexed UPDATE and DELETE): not every pass; reads show expiry exactly anyway. Passes
    // at most idleMaxMs apart, so starting the sweep idleMaxMs early keeps it within EXPIRY_INTERVAL_MS.
    if (Date.now() - expiredAt < EXPIRY_INTERVAL_MS - idleMaxMs) return worked
    expiredAt = Date.now()
    try {
      const expired = await market.expireUnpaidTasks()
      const settled = await market.settleDueJobs()
      worked ||= expired.expired + settled.late + settled.accepted > 0
      expiryFaults.succeeded()
    } catch (error) {
      worked = true
      expiryFaults.failed(error)
    }
    return worked
  }
  const pacer = idlePacer(
    async () => {
      if (running) return true
      const passing = pass()
      running = passing.then(
        () => {},
        () => {},
      )
      try {
        return await passing
      } finally {
        running = null
      }
    },
    { busyMs: intervalMs, idleMaxMs },
  )
  return {
    /** Returns to the busy pace: this process just wrote something a pass may act on. */
    wake: pacer.wake,
    /** Stops the timer and waits for a pass in progress. */
    async stop() {
      pacer.stop()
      await running
    },
  }
}
