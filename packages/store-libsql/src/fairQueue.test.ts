import { describe, expect, test } from 'bun:test'
import { WEBHOOK_FAIR_SHARE } from '@agentmarket/core'
import { fairPick, QUEUES, sqliteSql } from '@agentmarket/store-sql'
import { SQLiteSyncDialect } from 'drizzle-orm/sqlite-core'
import { openDatabase } from './open.ts'

/** SQLite's plan of the fair pick of `queue`, one line per step, on a migrated database. */
async function planOf(queue: (typeof QUEUES)['webhooks' | 'mail']): Promise<string[]> {
  const database = await openDatabase(':memory:')
  const query = new SQLiteSyncDialect().sqlToQuery(fairPick(sqliteSql, queue, 1_000, WEBHOOK_FAIR_SHARE))
  const rows = database.connection.all(`explain query plan ${query.sql}`, query.params)
  database.close()
  return rows.map((row) => String(row.detail))
}

describe('fair pick: reads of the backlog', () => {
  for (const name of ['webhooks', 'mail'] as const)
    test(`attack: a backlog of any depth: the ${name} claim reads each endpoint's first due items by index seeks and the leased ones by their index, never the whole queue`, async () => {
      // Should happen: every read of the queue's table is a seek in the (endpoint, due, id) index, by its rowid, or
      // in the in-flight index. Before: the claim ranked every due item (a range over the due index), so a flood made
      // every pass read the whole backlog.
      const queue = QUEUES[name]
      const reads = (await planOf(queue)).filter((step) =>
        new RegExp(`^(SCAN|SEARCH) ${queue.table}\\b`).test(step),
      )
      expect(reads.length).toBeGreaterThan(0)
      const allowed = [
        new RegExp(`USING INDEX ${queue.table}_pending_by_endpoint( \\(${queue.endpoint}[=>]\\?.*\\))?$`),
        /USING INTEGER PRIMARY KEY \(rowid=\?\)$/,
        new RegExp(`USING INDEX ${queue.table}_in_flight \\(leased_until>\\?\\)$`),
      ]
      for (const step of reads)
        expect(
          allowed.some((pattern) => pattern.test(step)),
          step,
        ).toBe(true)
      expect(
        reads.some((step) => step.startsWith('SCAN')),
        'no step scans the table',
      ).toBe(false)
    })
})
