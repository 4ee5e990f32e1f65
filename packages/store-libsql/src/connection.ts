import { is, SQL, type SQLWrapper } from 'drizzle-orm'
import { BetterSQLiteSession } from 'drizzle-orm/better-sqlite3/session'
import { BaseSQLiteDatabase, SQLiteSyncDialect } from 'drizzle-orm/sqlite-core'
import type Libsql from 'libsql'

/** What a write statement did: the rows it changed, and the last row id it inserted. */
export type RunInfo = { changes: number; lastInsertRowid: number | bigint }

/** The drizzle database over a connection: queries run synchronously on its cached prepared statements. */
export type SqlDatabase = BaseSQLiteDatabase<'sync', RunInfo>

/** Bind values of a statement: positional (`?`) or named (`:key`). */
export type Args = unknown[] | Record<string, unknown>

/** What drizzle can turn into SQL: a query builder or a `sql` fragment. */
export type BuildsSql = SQLWrapper | { toSQL(): { sql: string; params: unknown[] } }

/**
 * One libSQL connection (libsql-js, the engine under `@libsql/client`) with its prepared statements kept by SQL text,
 * so a query is compiled once per process instead of once per call. Every call is synchronous: a local file answers
 * in microseconds, and a transaction cannot interleave with another caller's statements.
 */
export type Connection = {
  /** The drizzle database over this connection. */
  db: SqlDatabase
  /** Rows as objects keyed by column name. */
  all(sql: string, args?: Args): Record<string, unknown>[]
  /** Rows as arrays of values, in column order. */
  values(sql: string, args?: Args): unknown[][]
  /** Runs a statement that returns no rows. */
  run(sql: string, args?: Args): RunInfo
  /** Runs SQL text of one or more statements, uncached (migrations, pragmas). */
  exec(sql: string): void
  /**
   * Runs `work` inside `BEGIN IMMEDIATE` … `COMMIT` (all of it or none of it; writers in other processes wait on the
   * lock). `work` must be synchronous: no other statement can run on this connection while it does.
   */
  writeTransaction<T>(work: () => T): T
  /** Closes the connection. */
  close(): void
}

/** How many distinct statements stay prepared; the least recently added goes first past it. */
export const STATEMENT_CACHE_SIZE = 1000

const dialect = new SQLiteSyncDialect()

/** A drizzle query or SQL fragment as SQL text and its bind values. */
export function toStatement(query: BuildsSql): { sql: string; args: unknown[] } {
  const built = is(query, SQL)
    ? dialect.sqlToQuery(query)
    : (query as { toSQL(): { sql: string; params: unknown[] } }).toSQL()
  return { sql: built.sql, args: built.params }
}

type Native = InstanceType<typeof Libsql>
type NativeStatement = ReturnType<Native['prepare']>

/**
 * A statement as drizzle's better-sqlite3 session calls it, over one cached native statement. Raw (array) mode is a
 * flag of the native statement, so each call sets the mode it needs; bind values go as one array, never spread
 * (libsql-js reads a lone object argument, a lone `null` included, as named parameters).
 */
function sessionStatement(native: NativeStatement) {
  const rows = {
    all: (...args: unknown[]) => native.raw(true).all(args),
    get: (...args: unknown[]) => native.raw(true).get(args),
  }
  return {
    run: (...args: unknown[]) => native.run(args),
    all: (...args: unknown[]) => native.raw(false).all(args),
    get: (...args: unknown[]) => native.raw(false).get(args),
    raw: () => rows,
  }
}

/** Prepared statements by SQL text, at most `size` of them. */
function statementCache(native: Native, size: number) {
  const cache = new Map<string, { native: NativeStatement; session: ReturnType<typeof sessionStatement> }>()
  return (sql: string) => {
    let entry = cache.get(sql)
    if (!entry) {
      if (cache.size >= size) cache.delete(cache.keys().next().value as string)
      const statement = native.prepare(sql)
      entry = { native: statement, session: sessionStatement(statement) }
      cache.set(sql, entry)
    }
    return entry
  }
}

/** Bind values in the form libsql-js reads: one array or one object, never spread. */
const bound = (args: Args | undefined): Args => args ?? []

/**
 * A connection over an open libsql-js database.
 * @example const connection = connectionOver(new Libsql('data/market.db'))
 */
export function connectionOver(native: Native, cacheSize = STATEMENT_CACHE_SIZE): Connection {
  const prepared = statementCache(native, cacheSize)
  const client = { prepare: (sql: string) => prepared(sql).session }
  // drizzle's better-sqlite3 session over our statement cache: it only ever calls prepare(sql) on its client.
  const session = new BetterSQLiteSession(client as never, dialect, undefined)
  const db = new BaseSQLiteDatabase('sync', dialect, session as never, undefined) as SqlDatabase
  const run = (sql: string, args?: Args): RunInfo => prepared(sql).native.run(bound(args)) as RunInfo
  return {
    db,
    all: (sql, args) => prepared(sql).native.raw(false).all(bound(args)) as Record<string, unknown>[],
    values: (sql, args) => prepared(sql).native.raw(true).all(bound(args)) as unknown[][],
    run,
    exec: (sql) => native.exec(sql),
    writeTransaction(work) {
      run('BEGIN IMMEDIATE')
      try {
        const result = work()
        // A promise would commit before its statements ran, outside the transaction.
        if (result instanceof Promise) throw new TypeError('writeTransaction needs synchronous work')
        run('COMMIT')
        return result
      } catch (error) {
        if (native.inTransaction) run('ROLLBACK')
        throw error
      }
    },
    close: () => native.close(),
  }
}
