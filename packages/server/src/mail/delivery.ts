import type { MailDeliveryOptions, Mailer, MarketplaceActions } from '@agentmarket/core'
import { fallbackLogger, type Logger } from '../log.ts'

/** The running outbox sender. */
export type MailDelivery = {
  /** Starts a pass now (or right after the running one): new replies go out without waiting for the timer. */
  kick(): void
  /** Stops the timer, waits for a pass in progress, then sends what is due once more, for at most `flushMs`. */
  stop(flushMs?: number): Promise<void>
}

/**
 * Sends the outbox through `mailer` on a timer, one pass at a time. Every server process may run it: claiming an
 * entry leases it, so two processes never send the same attempt.
 * @example const delivery = startMailDelivery(market, smtpMailer(url), { intervalMs: 1_000 })
 */
export function startMailDelivery(
  market: MarketplaceActions,
  mailer: Mailer,
  {
    intervalMs,
    logger = fallbackLogger,
    ...options
  }: { intervalMs: number; logger?: Logger } & MailDeliveryOptions,
): MailDelivery {
  let running: Promise<void> | null = null
  let again = false
  const pass = async () => {
    try {
      const { retrying, failed } = await market.deliverMail(mailer, options)
      if (retrying || failed) logger.warn('mail relay refused sends', { retrying, failed })
    } catch (error) {
      logger.error('mail delivery pass failed', {}, error)
    }
  }
  const run = () => {
    if (running) {
      again = true
      return
    }
    running = pass().finally(() => {
      running = null
      if (again) {
        again = false
        run()
      }
    })
  }
  const timer = setInterval(run, intervalMs)
  return {
    kick: run,
    async stop(flushMs = 5_000) {
      clearInterval(timer)
      again = false
      await running
      // What is left stays in the outbox for the next start; this only spares replies a restart's delay.
      await Promise.race([pass(), new Promise((done) => setTimeout(done, flushMs))])
    },
  }
}
