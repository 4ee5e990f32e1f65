import type { FeedEventInput } from '@agentmarket/core'
import { type BuildsSql, type RunInfo, toStatement } from './connection.ts'
import type { Database } from './open.ts'
import { events } from './schema.ts'

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

/**
 * Multi-statement writes in one `BEGIN IMMEDIATE` transaction: all of it lands or none of it, and writers in other
 * processes wait on the database lock instead of failing.
 */
export function batchWriter({ db, connection }: Database) {
  return {
    /** Runs the statements in one write transaction; resolves to each statement's result. */
    writeBatch: async (queries: BuildsSql[]): Promise<RunInfo[]> =>
      connection.writeTransaction(() =>
        queries.map((query) => {
          const { sql, args } = toStatement(query)
          return connection.run(sql, args)
        }),
      ),
    /** The insert of `list` as feed events (nothing for an empty list). */
    insertEvents: (list: FeedEventInput[]) =>
      list.length ? [db.insert(events).values(list.map(toEventRow))] : [],
  }
}
