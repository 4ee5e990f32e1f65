import { getTableColumns, is, Placeholder, type SQL, sql } from 'drizzle-orm'
import type { SQLiteTable } from 'drizzle-orm/sqlite-core'
import { type BuildsSql, type Connection, toStatement } from './connection.ts'

/** Column kinds whose values drizzle hands over as the driver reads them: no decoding to skip. */
const UNDECODED = new Set(['SQLiteText', 'SQLiteInteger', 'SQLiteReal'])

/** Every column of `table`, selected under its property name (`"agent_key" as "agentKey"`). */
export function named<T extends SQLiteTable>(
  table: T,
): { [K in keyof T['$inferSelect']]: SQL.Aliased<T['$inferSelect'][K]> } {
  const columns = Object.entries(getTableColumns(table))
  for (const [key, column] of columns)
    if (!UNDECODED.has(column.columnType))
      throw new TypeError(`named: column ${key} is decoded (${column.columnType})`)
  return Object.fromEntries(columns.map(([key, column]) => [key, sql`${column}`.as(key)])) as never
}

/**
 * A read prepared once whose rows the driver returns already shaped as drizzle would shape them: select with
 * `named(table)` (and `sql\`…\`.as(name)` for the rest), so no row is mapped column by column in JavaScript.
 * drizzle's own row mapping cost about as much as SQLite's read itself (4 µs of a task read's 7.5; bench/CHANGES.md).
 * Bind values by the names of the query's `sql.placeholder`s.
 * @example const byKey = shapedRead<AgentRow>(connection, db.select(named(agents)).from(agents).where(eq(agents.nameKey, sql.placeholder('key'))))
 */
export function shapedRead<Row>(connection: Connection, query: BuildsSql) {
  const { sql: text, args } = toStatement(query)
  // Which bind value is a placeholder's, told once: drizzle's `is` on every value of every read cost more.
  const names = args.map((arg) => (is(arg, Placeholder) ? (arg as Placeholder).name : null))
  const fill = (values: Record<string, unknown>) =>
    names.map((name, index) => (name === null ? args[index] : values[name]))
  return {
    /** The first row, or undefined. */
    get: (values: Record<string, unknown> = {}) => connection.get(text, fill(values)) as Row | undefined,
    /** Every row. */
    all: (values: Record<string, unknown> = {}) => connection.all(text, fill(values)) as Row[],
  }
}
