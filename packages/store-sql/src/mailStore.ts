import type { MailStore } from '@agentmarket/core'
import { settledMailColumns, toOutboxEntry } from '@agentmarket/core/rows'
import { and, type Column, eq, isNull, type SQL } from 'drizzle-orm'
import type { Executor } from './executor.ts'

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

/** The outbox methods both stores run alike, over a store's executor. */
export function mailReads(x: Executor): Pick<MailStore, 'settleMail' | 'getMail'> {
  const { outbox } = x.tables
  const { pending } = mailQueries(outbox)
  return {
    async settleMail(id, outcome) {
      await x.change('outbox', settledMailColumns(outcome), and(eq(outbox.id, id), pending))
    },

    async getMail(id) {
      const [row] = await x.rows({ from: 'outbox', where: eq(outbox.id, id) })
      return row ? toOutboxEntry(row) : null
    },
  }
}
