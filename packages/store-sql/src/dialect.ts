import { type SQL, sql } from 'drizzle-orm'
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
  /** Written after an id in an order: byte-wise order (SQLite's text order already is). */
  bytewise: SQL
}

/** SQLite's way (store-libsql). */
export const sqliteSql: SqlDialect = {
  name: 'sqlite',
  long: (value) => sql`${value}`,
  int: (value) => sql`${value}`,
  bytewise: sql``,
}

/** PostgreSQL's way (store-postgres): keys and dates order by `COLLATE "C"`. */
export const postgresSql: SqlDialect = {
  name: 'postgresql',
  long: (value) => sql`${value}::bigint`,
  int: (value) => sql`${value}::int`,
  bytewise: sql` collate "C"`,
}
