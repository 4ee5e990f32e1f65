import { getTableColumns, is, Param, Placeholder, type SQL, sql } from 'drizzle-orm'
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
  const fill = placeholderFiller(args)
  return {
    /** The first row, or undefined. */
    get: (values: Record<string, unknown> = {}) => connection.get(text, fill(values)) as Row | undefined,
    /** Every row. */
    all: (values: Record<string, unknown> = {}) => connection.all(text, fill(values)) as Row[],
  }
}

/**
 * The bind values of a statement built once with `sql.placeholder`s, from the values named by them. drizzle hands a
 * placeholder over as it is, or inside a Param whose column encoder maps the value (an insert's or an update's set);
 * every other argument is a constant of the statement. Which is which is told once: drizzle's `is` on every value of
 * every run cost more than a point read.
 */
export function placeholderFiller(args: unknown[]): (values: Record<string, unknown>) => unknown[] {
  type Slot = { name: string; encode: (value: unknown) => unknown } | { constant: unknown }
  const slots = args.map((arg): Slot => {
    if (is(arg, Placeholder)) return { name: arg.name, encode: (value) => value }
    if (is(arg, Param) && is(arg.value, Placeholder)) {
      const { encoder } = arg
      return { name: arg.value.name, encode: (value) => encoder.mapToDriverValue(value) }
    }
    return { constant: arg }
  })
  return (values) => slots.map((slot) => ('name' in slot ? slot.encode(values[slot.name]) : slot.constant))
}
