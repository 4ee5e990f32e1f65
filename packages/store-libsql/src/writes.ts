import type { FeedEventInput } from '@agentmarket/core'
import type { InStatement } from '@libsql/client'
import { is, SQL, type SQLWrapper } from 'drizzle-orm'
import { SQLiteAsyncDialect } from 'drizzle-orm/sqlite-core'
import type { Database } from './open.ts'
import { events } from './schema.ts'

/** What drizzle can turn into SQL: a query builder or a `sql` fragment. */
export type BuildsSql = SQLWrapper | { toSQL(): { sql: string; params: unknown[] } }

/** A time as its epoch-milliseconds column; null stays null. */
export const ms = (date: Date | null | undefined): number | null => date?.getTime() ?? null

/** An epoch-milliseconds column as a time; null stays null. */
export const dateOf = (value: number | null): Date | null => (value === null ? null : new Date(value))

/** The row of a feed event. */
export function toEventRow(event: FeedEventInput): typeof events.$inferInsert {
  return {
    kind: event.kind,
    agent: event.agent,
    at: event.at.getTime(),
    summary: event.summary,
    data: JSON.stringify(event.data),
  }
}

/** True when `error`, or any error it wraps, is a uniqueness failure of `column` (e.g. `agents.name_key`). */
export function isUniqueViolation(error: unknown, column: string): boolean {
  for (let current = error; current instanceof Error; current = current.cause) {
    if (/UNIQUE constraint failed|PRIMARY KEY/i.test(current.message) && current.message.includes(column))
      return true
  }
  return false
}

const dialect = new SQLiteAsyncDialect()

/** A drizzle query or SQL fragment as a libSQL statement. */
export function toStatement(query: BuildsSql): InStatement {
  const built = is(query, SQL)
    ? dialect.sqlToQuery(query)
    : (query as { toSQL(): { sql: string; params: unknown[] } }).toSQL()
  return { sql: built.sql, args: built.params as InStatement extends { args?: infer A } ? A : never }
}

/**
 * Multi-statement writes as one libSQL `batch` in `write` mode: one `BEGIN IMMEDIATE` transaction, so all of it
 * lands or none of it, and writers in other processes wait on the database lock instead of failing.
 */
export function batchWriter({ db, client }: Database) {
  return {
    /** Runs the statements in one write transaction; resolves to each statement's result. */
    writeBatch: (queries: BuildsSql[]) => client.batch(queries.map(toStatement), 'write'),
    /** The insert of `list` as feed events (nothing for an empty list). */
    insertEvents: (list: FeedEventInput[]) =>
      list.length ? [db.insert(events).values(list.map(toEventRow))] : [],
  }
}
