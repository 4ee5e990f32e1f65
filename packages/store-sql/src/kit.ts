import * as pg from 'drizzle-orm/pg-core'
import * as sqlite from 'drizzle-orm/sqlite-core'

/** The SQL dialects the stores speak, as drizzle-kit names them. */
export type Dialect = 'sqlite' | 'postgresql'

/**
 * SQLite's builders (store-libsql): every whole number is an `integer` (64-bit in SQLite), a feed sequence is an
 * autoincrement key, a fraction is `real`.
 */
export const sqliteKit = {
  dialect: 'sqlite' as const,
  table: sqlite.sqliteTable,
  text: <Name extends string>(name: Name) => sqlite.text(name),
  /** A count or flag: a 32-bit integer in PostgreSQL. */
  int: <Name extends string>(name: Name) => sqlite.integer(name),
  /** Epoch milliseconds or base units: past 2^31, so a bigint (read as a JS number) in PostgreSQL. */
  long: <Name extends string>(name: Name) => sqlite.integer(name),
  /** A key drawn in insert order. */
  seq: <Name extends string>(name: Name) => sqlite.integer(name).primaryKey({ autoIncrement: true }),
  real: <Name extends string>(name: Name) => sqlite.real(name),
  index: sqlite.index,
  uniqueIndex: sqlite.uniqueIndex,
  primaryKey: sqlite.primaryKey,
}

/** The builders a table description is written with: SQLite's types, the canonical ones (schema.ts says why). */
export type DialectKit = Omit<typeof sqliteKit, 'dialect'> & { dialect: Dialect }

/**
 * PostgreSQL's builders (store-postgres): counts and flags `integer`, times and amounts `bigint` read as JS numbers
 * (all stay far below 2^53), sequences `bigserial`, fractions `double precision`.
 */
export const postgresKit = {
  dialect: 'postgresql' as const,
  table: pg.pgTable,
  text: <Name extends string>(name: Name) => pg.text(name),
  int: <Name extends string>(name: Name) => pg.integer(name),
  long: <Name extends string>(name: Name) => pg.bigint(name, { mode: 'number' }),
  seq: <Name extends string>(name: Name) => pg.bigserial(name, { mode: 'number' }).primaryKey(),
  real: <Name extends string>(name: Name) => pg.doublePrecision(name),
  index: pg.index,
  uniqueIndex: pg.uniqueIndex,
  primaryKey: pg.primaryKey,
}
