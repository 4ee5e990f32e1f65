import { type FairShare, MAIL_FAIR_SHARE } from '../../FairQueue.ts'
import { MAIL_GIVE_UP_MS, type MailOutcome, mailRetryDelayMs, type OutboxEntry } from '../../OrderMail.ts'
import type { Mailer } from '../../ports/Mailer.ts'
import type { MailStore } from '../../ports/Store.ts'
import type { ActionContext } from '../context.ts'

/** What one pass over the outbox did. */
export type MailDeliveryReport = { sent: number; retrying: number; failed: number }

/** Options of one outbox pass. */
export type MailDeliveryOptions = {
  /** Claimed by (default MAIL_FAIR_SHARE): per-recipient and per-domain quotas of sends in flight. */
  share?: FairShare
  /** Most entries sent in this pass (the share's `limit` when given). */
  limit?: number
  /** How long a claimed entry is held by this pass before another sender may try it. */
  leaseMs?: number
  /** Delay before the next attempt after `attempts` failed ones. */
  retryDelayMs?: (attempts: number) => number
  /** Told how many entries the pass claimed, before any is sent (as the webhook pass's option). */
  onClaimed?: (count: number) => void
}

const LONGEST_ERROR = 500

/** The outbox actions: a sending pass, and reading one entry. */
export function deliveryActions(context: ActionContext<MailStore>) {
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
     * One pass over the outbox: claims the due entries by the fair share (FairQueue.ts: per-recipient and per-domain
     * quotas of sends in flight, round-robin across recipients) and hands them to `mailer` at once, so a send that
     * hangs holds back none but itself. A failed send is retried later with back-off (1 s doubling to 10 min) and
     * abandoned after three days; a crash mid-pass leaves the entry to be retried once its lease ends.
     */
    async deliverMail(mailer: Mailer, options: MailDeliveryOptions = {}): Promise<MailDeliveryReport> {
      const { share = MAIL_FAIR_SHARE, leaseMs = 120_000, retryDelayMs = mailRetryDelayMs } = options
      const limit = options.limit ?? share.limit
      const now = clock.now()
      const due =
        limit > 0 ? await store.claimDueMail(now, new Date(now.getTime() + leaseMs), { ...share, limit }) : []
      options.onClaimed?.(due.length)
      const report: MailDeliveryReport = { sent: 0, retrying: 0, failed: 0 }
      await Promise.all(
        due.map(async (entry) => {
          const outcome = await attempt(mailer, entry, retryDelayMs)
          await store.settleMail(entry.id, outcome)
          report[outcome.outcome === 'retry' ? 'retrying' : outcome.outcome] += 1
        }),
      )
      return report
    },

    /** An outbox entry: what was sent or is waiting, with its attempts and last error. */
    async getMail(id: string): Promise<OutboxEntry | null> {
      return store.getMail(id)
    },
  }
}
