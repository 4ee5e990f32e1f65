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
 * Multi-statement writes, all of a batch landing or none of it, in a `BEGIN IMMEDIATE` transaction (writers in other
 * processes wait on the database lock instead of failing).
 */
export function batchWriter({ db, connection }: Database) {
  const runAll = (queries: BuildsSql[]) => () =>
    queries.map((query) => {
      const { sql, args } = toStatement(query)
      return connection.run(sql, args)
    })
  return {
    /** Runs the statements in the next group commit (shared with other callers' batches); each one's result. */
    writeBatch: (queries: BuildsSql[]): Promise<RunInfo[]> => connection.commitTogether(runAll(queries)),
    /** Runs the statements in a transaction of their own at once, for callers that group their writes themselves. */
    writeNow: async (queries: BuildsSql[]): Promise<RunInfo[]> =>
      connection.writeTransaction(runAll(queries)),
    /** The insert of `list` as feed events (nothing for an empty list). */
    insertEvents: (list: FeedEventInput[]) =>
      list.length ? [db.insert(events).values(list.map(toEventRow))] : [],
  }
}
