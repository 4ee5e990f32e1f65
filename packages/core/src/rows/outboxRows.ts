import { type MailOutcome, mailQueueKeys, type OutboxEntry } from '../OrderMail.ts'
import { dateOf, ms } from './columns.ts'

/** An outbox entry's row (`outbox`); `references` and `headers` are JSON text. */
export type OutboxRow = {
  id: string
  fromAddress: string
  toAddress: string
  /** The fair claim's tenant and endpoint (OrderMail.ts mailQueueKeys of `toAddress`). */
  tenant: string
  endpoint: string
  subject: string
  body: string
  messageId: string
  inReplyTo: string | null
  references: string
  headers: string
  createdAt: number
  attempts: number
  nextAttemptAt: number
  leasedUntil: number | null
  sentAt: number | null
  failedAt: number | null
  lastError: string | null
}

/** The row of an outbox entry. */
export function toOutboxRow(entry: OutboxEntry): OutboxRow {
  const { mail } = entry
  return {
    id: entry.id,
    fromAddress: mail.from,
    toAddress: mail.to,
    ...mailQueueKeys(mail.to),
    subject: mail.subject,
    body: mail.text,
    messageId: mail.messageId,
    inReplyTo: mail.inReplyTo,
    references: JSON.stringify(mail.references),
    headers: JSON.stringify(mail.headers),
    createdAt: entry.createdAt.getTime(),
    attempts: entry.attempts,
    nextAttemptAt: entry.nextAttemptAt.getTime(),
    leasedUntil: ms(entry.leasedUntil),
    sentAt: ms(entry.sentAt),
    failedAt: ms(entry.failedAt),
    lastError: entry.lastError,
  }
}

/** The record of an outbox row. */
export function toOutboxEntry(row: Omit<OutboxRow, 'tenant' | 'endpoint'>): OutboxEntry {
  return {
    id: row.id,
    mail: {
      from: row.fromAddress,
      to: row.toAddress,
      subject: row.subject,
      text: row.body,
      messageId: row.messageId,
      inReplyTo: row.inReplyTo,
      references: JSON.parse(row.references),
      headers: JSON.parse(row.headers),
    },
    createdAt: new Date(row.createdAt),
    attempts: row.attempts,
    nextAttemptAt: new Date(row.nextAttemptAt),
    leasedUntil: dateOf(row.leasedUntil),
    sentAt: dateOf(row.sentAt),
    failedAt: dateOf(row.failedAt),
    lastError: row.lastError,
  }
}

/** The columns an attempt's outcome sets (its lease ends: it is no longer in flight). */
export function settledMailColumns(outcome: MailOutcome): Partial<OutboxRow> {
  if (outcome.outcome === 'sent') return { leasedUntil: null, sentAt: outcome.at.getTime() }
  if (outcome.outcome === 'failed')
    return { leasedUntil: null, failedAt: outcome.at.getTime(), lastError: outcome.error }
  return { leasedUntil: null, nextAttemptAt: outcome.nextAttemptAt.getTime(), lastError: outcome.error }
}
