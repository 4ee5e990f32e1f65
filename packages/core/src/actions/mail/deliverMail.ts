import { MAIL_GIVE_UP_MS, type MailOutcome, mailRetryDelayMs, type OutboxEntry } from '../../OrderMail.ts'
import type { Mailer } from '../../ports/Mailer.ts'
import type { ActionContext } from '../context.ts'

/** What one pass over the outbox did. */
export type MailDeliveryReport = { sent: number; retrying: number; failed: number }

/** Options of one outbox pass. */
export type MailDeliveryOptions = {
  /** Most entries sent in this pass. */
  limit?: number
  /** How long a claimed entry is held by this pass before another sender may try it. */
  leaseMs?: number
  /** Delay before the next attempt after `attempts` failed ones. */
  retryDelayMs?: (attempts: number) => number
}

const LONGEST_ERROR = 500

/** The outbox actions: a sending pass, and reading one entry. */
export function deliveryActions(context: ActionContext) {
  const { store, clock } = context

  /** One attempt to send a claimed entry, and how it ended. */
  const attempt = async (
    mailer: Mailer,
    entry: OutboxEntry,
    retryDelayMs: (attempts: number) => number,
  ): Promise<MailOutcome> => {
    try {
      await mailer.send(entry.mail)
      return { outcome: 'sent', at: clock.now() }
    } catch (failure) {
      const at = clock.now()
      const error = (failure instanceof Error ? failure.message : String(failure)).slice(0, LONGEST_ERROR)
      if (at.getTime() - entry.createdAt.getTime() >= MAIL_GIVE_UP_MS) return { outcome: 'failed', at, error }
      return {
        outcome: 'retry',
        at,
        error,
        nextAttemptAt: new Date(at.getTime() + retryDelayMs(entry.attempts)),
      }
    }
  }

  return {
    /**
     * One pass over the outbox: claims the due entries and hands each to `mailer`. A failed send is retried later
     * with back-off (1 s doubling to 10 min) and abandoned after three days; a crash mid-pass leaves the entry to
     * be retried once its lease ends.
     */
    async deliverMail(mailer: Mailer, options: MailDeliveryOptions = {}): Promise<MailDeliveryReport> {
      const { limit = 20, leaseMs = 120_000, retryDelayMs = mailRetryDelayMs } = options
      const now = clock.now()
      const due = await store.claimDueMail(now, new Date(now.getTime() + leaseMs), limit)
      const report: MailDeliveryReport = { sent: 0, retrying: 0, failed: 0 }
      for (const entry of due) {
        const outcome = await attempt(mailer, entry, retryDelayMs)
        await store.settleMail(entry.id, outcome)
        report[outcome.outcome === 'retry' ? 'retrying' : outcome.outcome] += 1
      }
      return report
    },

    /** An outbox entry: what was sent or is waiting, with its attempts and last error. */
    async getMail(id: string): Promise<OutboxEntry | null> {
      return store.getMail(id)
    },
  }
}
