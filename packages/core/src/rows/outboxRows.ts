import type { OutboxEntry } from '../OrderMail.ts'
import { dateOf, ms } from './columns.ts'

/** An outbox entry's row (`outbox`); `references` and `headers` are JSON text. */
export type OutboxRow = {
  id: string
  fromAddress: string
  toAddress: string
  subject: string
  body: string
  messageId: string
  inReplyTo: string | null
  references: string
  headers: string
  createdAt: number
  attempts: number
  nextAttemptAt: number
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
    subject: mail.subject,
    body: mail.text,
    messageId: mail.messageId,
    inReplyTo: mail.inReplyTo,
    references: JSON.stringify(mail.references),
    headers: JSON.stringify(mail.headers),
    createdAt: entry.createdAt.getTime(),
    attempts: entry.attempts,
    nextAttemptAt: entry.nextAttemptAt.getTime(),
    sentAt: ms(entry.sentAt),
    failedAt: ms(entry.failedAt),
    lastError: entry.lastError,
  }
}

/** The record of an outbox row. */
export function toOutboxEntry(row: OutboxRow): OutboxEntry {
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
    sentAt: dateOf(row.sentAt),
    failedAt: dateOf(row.failedAt),
    lastError: row.lastError,
  }
}
