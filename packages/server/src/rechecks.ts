import type { MarketplaceActions } from '@agentmarket/core'
import { fallbackLogger, type Logger } from './log.ts'

/**
 * Runs the core's background re-check of payments sent at creation on a timer, one pass at a time. Every server
 * process may run it: marking a task paid is a compare-and-set, so two passes never pay a task twice.
 * @example const rechecks = startPaymentRechecks(market, { intervalMs: 2_000 }); rechecks.stop()
 */
export function startPaymentRechecks(
  market: MarketplaceActions,
  { intervalMs, logger = fallbackLogger }: { intervalMs: number; logger?: Logger },
) {
  let running: Promise<void> | null = null
  const pass = async () => {
    try {
      await market.recheckPendingPayments()
    } catch (error) {
      logger.error('payment re-check failed', {}, error)
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
