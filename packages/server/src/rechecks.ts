import { ChainUnavailableError, type MarketplaceActions } from '@agentmarket/core'
import { fallbackLogger, type Logger } from './log.ts'
import { passFaults } from './passFaults.ts'

const EXPIRY_INTERVAL_MS = 10_000

/**
 * Runs the core's background re-check of payments sent at creation every `intervalMs`, one pass at a time, with the
 * job escrow's follower, and at most every 10 s the expiry of unpaid tasks and the jobs time decided (late, accepted
 * by silence). A plain interval, not idlePacer: a pending payment's re-check is due 5 s after its order and must run
 * then, and the pass cannot tell from the store when the next check falls due, so backing off at rest made re-checks
 * late (tests/security/unpaidTasks.test.ts, "a budget per client", failed in CI with a 5 s back-off). Every server
 * process may run it: marking a task paid is a compare-and-set, so two passes never pay a task twice.
 * @example const rechecks = startPaymentRechecks(market, { intervalMs: 2_000 }); rechecks.stop()
 */
export function startPaymentRechecks(
  market: MarketplaceActions,
  { intervalMs, leaseMs, logger = fallbackLogger }: { intervalMs: number; leaseMs?: number; logger?: Logger },
) {
  let running: Promise<void> | null = null
  let expiredAt = 0
  // A database outage is told once per pass kind (passFaults), not as an error line every pass.
  const recheckFaults = passFaults(logger, 'payment re-check')
  const followerFaults = passFaults(logger, 'job escrow follower')
  const expiryFaults = passFaults(logger, 'task expiry')
  const pass = async () => {
    try {
      const { failure } = await market.recheckPendingPayments(undefined, leaseMs)
      // A chain outage is expected now and then (warn); anything behind it, or anything else, is a fault (error).
      if (failure instanceof ChainUnavailableError && failure.cause === undefined)
        logger.warn('payment re-check waits for the chain', { reason: failure.message })
      else if (failure !== undefined) recheckFaults.failed(failure)
      else recheckFaults.succeeded()
    } catch (error) {
      recheckFaults.failed(error)
    }
    try {
      await market.followJobEscrow()
      followerFaults.succeeded()
    } catch (error) {
      if (error instanceof ChainUnavailableError && error.cause === undefined)
        logger.warn('job escrow follower waits for the chain', { reason: error.message })
      else followerFaults.failed(error)
    }
    // Expiry is a write (one indexed UPDATE and DELETE): not every pass; reads show expiry exactly anyway. Passes
    // are intervalMs apart, so starting the sweep intervalMs early keeps it within EXPIRY_INTERVAL_MS.
    if (Date.now() - expiredAt < EXPIRY_INTERVAL_MS - intervalMs) return
    expiredAt = Date.now()
    try {
      await market.expireUnpaidTasks()
      await market.settleDueJobs()
      expiryFaults.succeeded()
    } catch (error) {
      expiryFaults.failed(error)
    }
  }
  const timer = setInterval(() => {
    if (running) return
    running = pass().finally(() => {
      running = null
    })
  }, intervalMs)
  return {
    /** Stops the timer and waits for a pass in progress. */
    async stop() {
      clearInterval(timer)
      await running
    },
  }
}
