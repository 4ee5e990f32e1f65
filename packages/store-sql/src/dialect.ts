import { type SQL, type SQLWrapper, sql } from 'drizzle-orm'
import type { Dialect } from './kit.ts'

/**
 * How a dialect writes the few things SQL written once for both stores cannot say the same way. PostgreSQL infers a
 * bound value's type from where it stands, so values compared with bigint columns or counted against window ranks are
 * cast; SQLite binds numbers as they are. Ids order byte-wise in both, as the core compares them.
 */
export type SqlDialect = {
  name: Dialect
  /** A bound epoch-millisecond or base-unit value. */
  long(value: number): SQL
  /** A bound count (a limit, a quota). */
  int(value: number): SQL
  /** An expression (a count or flag column) widened to 64 bits before it is multiplied into times or amounts. */
  widened(expression: SQLWrapper): SQL
  /** Written after an id in an order: byte-wise order (SQLite's text order already is). */
  bytewise: SQL
  /** The rows counted, read as a JavaScript number. */
  count: SQL
  /** The rows of a group where `condition` holds, counted, as a number. */
  countWhere(condition: SQL): SQL
  /** A truth as 0 or 1. */
  oneIf(condition: SQL): SQL
  /** The larger and the smaller of two values (SQLite's scalar `max`, `min`). */
  greatest(a: SQLWrapper, b: SQLWrapper): SQL
  least(a: SQLWrapper, b: SQLWrapper): SQL
  /** A JSON array kept as text with `items` (JSON texts) appended. */
  appendJson(array: SQLWrapper, items: string[]): SQL
}

/** SQLite's way (store-libsql). */
export const sqliteSql: SqlDialect = {
  name: 'sqlite',
  long: (value) => sql`${value}`,
  int: (value) => sql`${value}`,
  widened: (expression) => sql`${expression}`,
  bytewise: sql``,
  count: sql`count(*)`,
  countWhere: (condition) => sql`sum(${condition})`,
  oneIf: (condition) => sql`(${condition})`,
  greatest: (a, b) => sql`max(${a}, ${b})`,
  least: (a, b) => sql`min(${a}, ${b})`,
  appendJson: (array, items) =>
    sql`json_insert(${array}, ${sql.join(
      items.map((item) => sql`'$[#]', json(${item})`),
      sql`, `,
    )})`,
}

/** PostgreSQL's way (store-postgres): keys and dates order by `COLLATE "C"`. */
export const postgresSql: SqlDialect = {
  name: 'postgresql',
  long: (value) => sql`${value}::bigint`,
  int: (value) => sql`${value}::int`,
  widened: (expression) => sql`${expression}::bigint`,
  bytewise: sql` collate "C"`,
  count: sql`count(*)::int`,
  countWhere: (condition) => sql`(count(*) filter (where ${condition}))::int`,
  oneIf: (condition) => sql`(${condition})::int`,
  greatest: (a, b) => sql`greatest(${a}, ${b})`,
  least: (a, b) => sql`least(${a}, ${b})`,
  appendJson: (array, items) =>
    sql`(${array}::jsonb || jsonb_build_array(${sql.join(
      items.map((item) => sql`${item}::jsonb`),
      sql`, `,
    )}))::text`,
}
