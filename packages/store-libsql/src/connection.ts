import { is, SQL, type SQLWrapper } from 'drizzle-orm'
import { BetterSQLiteSession } from 'drizzle-orm/better-sqlite3/session'
import { BaseSQLiteDatabase, SQLiteSyncDialect } from 'drizzle-orm/sqlite-core'
import { isBusy, isDatabaseFault } from './faults.ts'
import { groupCommit } from './groupCommit.ts'

/** What a write statement did: the rows it changed, and the last row id it inserted. */
export type RunInfo = { changes: number; lastInsertRowid: number | bigint }

/** The drizzle database over a connection: queries run synchronously on its cached prepared statements. */
export type SqlDatabase = BaseSQLiteDatabase<'sync', RunInfo>

/** Bind values of a statement: positional (`?`) or named (`:key`). */
export type Args = unknown[] | Record<string, unknown>

/** What drizzle can turn into SQL: a query builder or a `sql` fragment. */
export type BuildsSql = SQLWrapper | { toSQL(): { sql: string; params: unknown[] } }

/**
 * One database connection with its prepared statements kept by SQL text, so a query is compiled once per process
 * instead of once per call. Every call is synchronous: a local file answers in microseconds, and a transaction cannot
 * interleave with another caller's statements.
 */
export type Connection = {
  /** The drizzle database over this connection. */
  db: SqlDatabase
  /** The first row as an object keyed by column name, or undefined. */
  get(sql: string, args?: Args): Record<string, unknown> | undefined
  /** Rows as objects keyed by column name. */
  all(sql: string, args?: Args): Record<string, unknown>[]
  /** Rows as arrays of values, in column order. */
  values(sql: string, args?: Args): unknown[][]
  /** Runs a statement that returns no rows. */
  run(sql: string, args?: Args): RunInfo
  /** Runs SQL text of one or more statements, uncached (migrations, pragmas). */
  exec(sql: string): void
  /**
   * Runs `work` inside `BEGIN IMMEDIATE` … `COMMIT` (all of it or none of it). While another process holds the write
   * lock, the lock is asked for again on timers for up to `lockWaitMs` (default `LOCK_WAIT_MS`), so the event loop
   * keeps serving; past it, the lock's error (a 503 `database_unavailable`: nothing was written). `work` must be
   * synchronous: no other statement can run on this connection while it does.
   */
  writeTransaction<T>(work: () => T, lockWaitMs?: number): Promise<T>
  /**
   * Runs `write`, one statement outside any transaction (SQLite's own transaction around it), asking again on timers
   * while another process holds the write lock, as `writeTransaction` does. Every lone write of a store goes through
   * it: with the serving busy timeout at zero, one that does not fails at once on a held lock.
   */
  unlocked<T>(write: () => T): Promise<T>
  /**
   * Runs synchronous `work` in the next group commit: every write queued while a commit runs, or in the same turn of
   * the event loop, shares one transaction and one sync to disk, each in its own savepoint, so one caller's failure
   * (a unique key, say) undoes only its own statements and rejects only its own promise. Resolves once committed.
   */
  commitTogether<T>(work: () => T): Promise<T>
  /** True from a write that found the disk full until a write lands again. */
  readonly storageFull: boolean
  /** Closes the connection. */
  close(): void
}

/** How many distinct statements stay prepared; the least recently added goes first past it. */
export const STATEMENT_CACHE_SIZE = 1000

/** How long a write waits for another process's write lock before it fails (a 503 to the client, within 2 s). */
export const LOCK_WAIT_MS = 1_000

/** Pauses between asks for a held write lock, as SQLite's own busy handler spaces them; the last one repeats. */
const LOCK_RETRY_PAUSES_MS = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100]

/**
 * Runs `write` (a BEGIN IMMEDIATE, or a lone write) once no other process holds the write lock; `write` must change
 * nothing when it fails on the lock, as SQLite's statements do. The connection's busy timeout is zero while
 * serving, so a held lock fails `BEGIN IMMEDIATE` at once and the wait happens here, on timers, instead of inside
 * SQLite's busy handler, which would hold the event loop (and every other request, `/api/health/live` included).
 */
async function whenUnlocked<T>(write: () => T, lockWaitMs: number): Promise<T> {
  const deadline = performance.now() + lockWaitMs
  for (let attempt = 0; ; attempt++) {
    try {
      return write()
    } catch (error) {
      const pause = LOCK_RETRY_PAUSES_MS[Math.min(attempt, LOCK_RETRY_PAUSES_MS.length - 1)] as number
      if (!isBusy(error) || performance.now() + pause > deadline) throw error
      await new Promise((resolve) => setTimeout(resolve, pause))
    }
  }
}

const dialect = new SQLiteSyncDialect()

/** A drizzle query or SQL fragment as SQL text and its bind values. */
export function toStatement(query: BuildsSql): { sql: string; args: unknown[] } {
  const built = is(query, SQL)
    ? dialect.sqlToQuery(query)
    : (query as { toSQL(): { sql: string; params: unknown[] } }).toSQL()
  return { sql: built.sql, args: built.params }
}

/** A prepared statement of a SQLite driver: bind values go as one array (positional) or one object (named). */
export type NativeStatement = {
  /** The first row as an object, or undefined. */
  get(args: Args): unknown
  /** Every row as an object. */
  all(args: Args): unknown[]
  /** Every row as an array of values, in column order. */
  values(args: Args): unknown[][]
  /** Runs the statement; what it changed. */
  run(args: Args): RunInfo
}

/** An open SQLite driver connection, as connections.ts's drivers give it. */
export type NativeDatabase = {
  prepare(sql: string): NativeStatement
  exec(sql: string): void
  readonly inTransaction: boolean
  /** True from a write that found the disk full until a write lands again (faults.ts); absent: never noted. */
  readonly storageFull?: boolean
  close(): void
}

/** A statement as drizzle's better-sqlite3 session calls it (values spread), over one native statement. */
function sessionStatement(native: NativeStatement) {
  const rows = {
    all: (...args: unknown[]) => native.values(args),
    get: (...args: unknown[]) => native.values(args)[0],
  }
  return {
    run: (...args: unknown[]) => native.run(args),
    all: (...args: unknown[]) => native.all(args),
    get: (...args: unknown[]) => native.get(args),
    raw: () => rows,
  }
}

/** Prepared statements by SQL text, at most `size` of them. */
function statementCache(native: NativeDatabase, size: number) {
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

/** Bind values in the form the drivers read: one array or one object, never spread. */
const bound = (args: Args | undefined): Args => args ?? []

/** What one write of a group commit came to: its value, or the error that undid it. */
type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown }

/** `work` run inside a savepoint of the open transaction: kept if it returns, undone (and reported) if it throws. */
function inSavepoint(run: (sql: string) => RunInfo, work: () => unknown): Outcome {
  run('SAVEPOINT together')
  try {
    const value = work()
    run('RELEASE together')
    return { ok: true, value }
  } catch (error) {
    run('ROLLBACK TO together')
    run('RELEASE together')
    return { ok: false, error }
  }
}

/**
 * A connection over an open driver connection (see drivers.ts).
 * @example const connection = connectionOver(await openNative({ path: ':memory:', local: true }))
 */
export function connectionOver(native: NativeDatabase, cacheSize = STATEMENT_CACHE_SIZE): Connection {
  const prepared = statementCache(native, cacheSize)
  const client = { prepare: (sql: string) => prepared(sql).session }
  // drizzle's better-sqlite3 session over our statement cache: it only ever calls prepare(sql) on its client.
  const session = new BetterSQLiteSession(client as never, dialect, undefined)
  const db = new BaseSQLiteDatabase('sync', dialect, session as never, undefined) as SqlDatabase
  const run = (sql: string, args?: Args): RunInfo => prepared(sql).native.run(bound(args))
  const writeTransaction = async <T>(work: () => T, lockWaitMs = LOCK_WAIT_MS): Promise<T> => {
    await whenUnlocked(() => run('BEGIN IMMEDIATE'), lockWaitMs)
    // From BEGIN to COMMIT nothing awaits: another caller's statements cannot land inside this transaction.
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
  }
  // A batch first runs without savepoints: inside one, SQLite copies every page a write touches so it could undo it
  // (a free order 89 to 78 µs without them; bench/CHANGES.md). Writes rarely fail; when one does, the whole
  // transaction is rolled back and the batch runs again with a savepoint per write, so the failure undoes only its own.
  const together = groupCommit(async (works: (() => unknown)[]): Promise<Outcome[]> => {
    let failure: { error: unknown } | null = null
    try {
      return await writeTransaction(() =>
        works.map((work): Outcome => {
          try {
            return { ok: true, value: work() }
          } catch (error) {
            failure = { error }
            throw error
          }
        }),
      )
    } catch (error) {
      // The transaction could not begin or commit, or the database itself failed (full, locked): the batch fails, as
      // every write in it would.
      if (failure === null || isDatabaseFault((failure as { error: unknown }).error)) throw error
    }
    if (works.length === 1) return [{ ok: false, error: (failure as { error: unknown }).error }]
    return writeTransaction(() => works.map((work) => inSavepoint(run, work)))
  })
  return {
    db,
    get: (sql, args) => prepared(sql).native.get(bound(args)) as Record<string, unknown> | undefined,
    all: (sql, args) => prepared(sql).native.all(bound(args)) as Record<string, unknown>[],
    values: (sql, args) => prepared(sql).native.values(bound(args)),
    run,
    exec: (sql) => native.exec(sql),
    writeTransaction,
    unlocked: (write) => whenUnlocked(write, LOCK_WAIT_MS),
    async commitTogether<T>(work: () => T) {
      const outcome = await together(work)
      if (!outcome.ok) throw outcome.error
      return outcome.value as T
    },
    get storageFull() {
      return native.storageFull ?? false
    },
    close: () => native.close(),
  }
}
