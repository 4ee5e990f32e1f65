import { and, type Column, isNull, type SQL } from 'drizzle-orm'

/**
 * The outbox's conditions, the same in both stores.
 * @example db.update(outbox).set(settledMailColumns(outcome)).where(and(eq(outbox.id, id), mailQueries(outbox).pending))
 */
export function mailQueries(outbox: Record<'sentAt' | 'failedAt', Column>) {
  return {
    /** Mail neither sent nor given up. */
    pending: and(isNull(outbox.sentAt), isNull(outbox.failedAt)) as SQL,
  }
}
