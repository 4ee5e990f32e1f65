import type { FeedEventInput } from '@agentmarket/core'
import { toEventRow } from '@agentmarket/core/rows'
import { sql } from 'drizzle-orm'
import type { SQLiteTable } from 'drizzle-orm/sqlite-core'
import { type BuildsSql, type RunInfo, toStatement } from './connection.ts'
import type { Database } from './open.ts'
import { events } from './schema.ts'
import { placeholderFiller } from './shapedReads.ts'

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
export function batchWriter(database: Database) {
  const { connection } = database
  const insertRow = rowInserter(database)
  const runStep = (step: WriteStep): RunInfo => {
    if (typeof step === 'function') return step()
    const { sql, args } = toStatement(step)
    return connection.run(sql, args)
  }
  const runAll = (steps: WriteStep[]) => () => steps.map(runStep)
  return {
    /** Runs the steps in the next group commit (shared with other callers' batches); each one's result. */
    writeBatch: (steps: WriteStep[]): Promise<RunInfo[]> => connection.commitTogether(runAll(steps)),
    /** Runs the steps in a transaction of their own at once, for callers that group their writes themselves. */
    writeNow: async (steps: WriteStep[]): Promise<RunInfo[]> => connection.writeTransaction(runAll(steps)),
    /** Runs the steps inside a transaction the caller holds open. */
    runAll: (steps: WriteStep[]): RunInfo[] => runAll(steps)(),
    /** The insert of one row, by a statement prepared once per table and set of columns. */
    insert:
      <T extends SQLiteTable>(table: T, row: T['$inferInsert']): WriteStep =>
      () =>
        insertRow(table, row),
    /** The inserts of `list` as feed events, one prepared insert each (nothing for an empty list). */
    insertEvents: (list: FeedEventInput[]): WriteStep[] =>
      list.map((event) => () => insertRow(events, toEventRow(event))),
  }
}

/** A step of a write batch: a drizzle query or SQL fragment (built at the call), or a prepared write to run. */
export type WriteStep = BuildsSql | (() => RunInfo)

/** An insert built for one table and one set of columns, in the order a row gives them. */
type InsertShape = { columns: string[]; sql: string; fill: (values: Record<string, unknown>) => unknown[] }

/** True when the columns `values` defines (not undefined) are `columns`, in that order. */
function fits(columns: string[], values: Record<string, unknown>): boolean {
  let index = 0
  for (const column in values) {
    if (values[column] === undefined) continue
    if (columns[index++] !== column) return false
  }
  return index === columns.length
}

/**
 * Inserts one row at a time with SQL built by drizzle once per table and set of columns and run by the connection's
 * cached statement with the row's values in place: a cached statement run per row costs a fraction of building a
 * multi-row insert, and binding by position skips drizzle's placeholder filling, which cost a free order about a
 * tenth of its time (bench/CHANGES.md). A row finds its statement among its table's by comparing its keys with each
 * one's columns: a key string of its 45 column names (a task's), made and looked up per row, cost 1.5 µs of it.
 */
function rowInserter({ db, connection }: Pick<Database, 'db' | 'connection'>) {
  const shapes = new Map<SQLiteTable, InsertShape[]>()
  const shapeOf = <T extends SQLiteTable>(table: T, values: Record<string, unknown>): InsertShape => {
    const known = shapes.get(table) ?? []
    for (const shape of known) if (fits(shape.columns, values)) return shape
    const columns = Object.keys(values).filter((column) => values[column] !== undefined)
    const placeholders = Object.fromEntries(columns.map((column) => [column, sql.placeholder(column)]))
    const built = toStatement(db.insert(table).values(placeholders as T['$inferInsert']))
    const shape = { columns, sql: built.sql, fill: placeholderFiller(built.args) }
    shapes.set(table, [...known, shape])
    return shape
  }
  return <T extends SQLiteTable>(table: T, row: T['$inferInsert']): RunInfo => {
    const values = row as Record<string, unknown>
    const shape = shapeOf(table, values)
    return connection.run(shape.sql, shape.fill(values))
  }
}

/**
 * Statements that vary with their columns, built and prepared once per id (a table and a set of columns, say) and
 * reused after: drizzle's builder costs more than the statement it builds.
 */
export function preparedOnce<Statement>() {
  const kept = new Map<string, Statement>()
  return (id: string, build: () => Statement): Statement => {
    let statement = kept.get(id)
    if (statement === undefined) {
      statement = build()
      kept.set(id, statement)
    }
    return statement
  }
}
