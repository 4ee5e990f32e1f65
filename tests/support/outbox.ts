import { createClient } from '@libsql/client'

/** One outbox row as the database file holds it: the reply to an order e-mail and its attempts. */
export type OutboxRow = {
  attempts: number
  lastError: string | null
  nextAttemptAt: number
  leasedUntil: number | null
  sentAt: number | null
}

/** The outbox rows of the replies to `messageId`, read from the database at `databaseUrl`. */
export async function outboxRows(databaseUrl: string, messageId: string): Promise<OutboxRow[]> {
  const database = createClient({ url: databaseUrl })
  try {
    const { rows } = await database.execute({
      sql: 'select attempts, last_error, next_attempt_at, leased_until, sent_at from outbox where in_reply_to = ?',
      args: [messageId],
    })
    return rows.map((row) => ({
      attempts: Number(row.attempts),
      lastError: row.last_error === null ? null : String(row.last_error),
      nextAttemptAt: Number(row.next_attempt_at),
      leasedUntil: row.leased_until === null ? null : Number(row.leased_until),
      sentAt: row.sent_at === null ? null : Number(row.sent_at),
    }))
  } finally {
    database.close()
  }
}

/**
 * Polls the outbox until the reply to `messageId` is in a state `reached` accepts, and returns it. The bound is only
 * there so a broken server fails the test instead of hanging it: a slow machine reaches the state later, not never.
 */
export async function outboxReaches(
  databaseUrl: string,
  messageId: string,
  reached: (row: OutboxRow) => boolean,
  boundMs = 120_000,
): Promise<OutboxRow> {
  const started = performance.now()
  for (;;) {
    const [row] = await outboxRows(databaseUrl, messageId)
    if (row && reached(row)) return row
    if (performance.now() - started > boundMs)
      throw new Error(`the reply to ${messageId} never reached the state waited for: ${JSON.stringify(row)}`)
    await Bun.sleep(25)
  }
}
