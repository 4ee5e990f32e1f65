import type { MailDeliveryOptions, Mailer, MarketplaceActions } from '@agentmarket/core'
import { fallbackLogger, type Logger } from '../log.ts'
import { passFaults } from '../passFaults.ts'

/** The running outbox sender. */
export type MailDelivery = {
  /** Starts a pass now (or right after the running one): new replies go out without waiting for the timer. */
  kick(): void
  /** Stops the timer, waits for the passes in progress, then sends what is due once more, for at most `flushMs` in all. */
  stop(flushMs?: number): Promise<void>
}

/** How many delivery passes one process runs at once: a pass whose sends hang holds only its own claims. */
export const MAIL_PASSES_AT_ONCE = 4

/**
 * Sends the outbox through `mailer` on a timer. Passes do not wait for one another (up to MAIL_PASSES_AT_ONCE at
 * once): each claims by the fair share (core FairQueue.ts, MAIL_FAIR_SHARE), which counts what other passes and
 * processes hold in flight, so a domain whose mail hangs holds its share and never the next pass's turn. Every server
 * process may run it: claiming an entry leases it, so two processes never send the same attempt.
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
  const running = new Set<Promise<void>>()
  let again = false
  let stopped = false
  const faults = passFaults(logger, 'mail delivery pass')
  const pass = async () => {
    try {
      const { retrying, failed } = await market.deliverMail(mailer, options)
      if (retrying || failed) logger.warn('mail relay refused sends', { retrying, failed })
      faults.succeeded()
    } catch (error) {
      faults.failed(error)
    }
  }
  const run = () => {
    if (stopped) return
    if (running.size >= MAIL_PASSES_AT_ONCE) {
      again = true
      return
    }
    const started: Promise<void> = pass().finally(() => {
      running.delete(started)
      if (again) {
        again = false
        run()
      }
    })
    running.add(started)
  }
  const timer = setInterval(run, intervalMs)
  return {
    kick: run,
    async stop(flushMs = 5_000) {
      clearInterval(timer)
      stopped = true
      again = false
      const waited = Promise.all(running)
      // What is left stays in the outbox for the next start; this only spares replies a restart's delay.
      await Promise.race([waited.then(pass), new Promise((done) => setTimeout(done, flushMs))])
    },
  }
}
