import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { type Connection, connectionOver, type SqlDatabase } from './connection.ts'
import { type Driver, type Location, openNative } from './drivers.ts'
import { isBusy, isDatabaseFault } from './faults.ts'
import { applyMigrations, type MigrationReport } from './migrate.ts'
import { indexSearchTail } from './searchIndex.ts'

/** An open, migrated database, and what migrating it at this opening did. */
export type Database = {
  connection: Connection
  db: SqlDatabase
  migrations: MigrationReport
  close(): void
}

/** Where libsql-js opens a URL: the file path of a `file:` URL, `:memory:`, or a remote URL as given. */
function location(url: string): Location {
  if (url === ':memory:' || url === 'file::memory:') return { path: ':memory:', local: true }
  if (!url.startsWith('file:')) return { path: url, local: false }
  const path = url.slice('file:'.length).split('?')[0] ?? ''
  return { path: path.startsWith('//') ? new URL(url).pathname : path, local: true }
}

/**
 * Runs a start-up step again while another process holds a lock it needs. Switching to WAL takes an exclusive lock
 * and SQLite may refuse it at once rather than wait, so processes starting together on a new database take turns.
 * The step must be safe to repeat.
 * @example await whileBusy(() => migrate(connection))
 */
export async function whileBusy<T>(step: () => T | Promise<T>, attempts = 40): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step()
    } catch (error) {
      if (!isBusy(error) || attempt >= attempts) throw error
      await new Promise((resolve) => setTimeout(resolve, 25 + Math.random() * 100))
    }
  }
}

/**
 * How long a statement waits for another process's lock at start, where a held lock is retried (see `untilUnlocked`)
 * and must be told within a second. Serving waits with no busy timeout at all (connection.ts `LOCK_WAIT_MS`).
 */
const START_BUSY_TIMEOUT_MS = 200
/** How long a start waits on a lock held by another process before it gives up, unless told otherwise. */
export const DEFAULT_LOCK_WAIT_MS = 30_000

/** How a start waits on a database another process holds locked: how long, and whom it tells once it is waiting. */
export type LockWait = { ms?: number; onLocked?: (message: string) => void }

/** A database another process kept locked for longer than the start would wait. */
export class DatabaseLockedError extends Error {
  override readonly name = 'DatabaseLockedError'
}

/**
 * Runs a start-up step again while another process holds a lock it needs, until `wait.ms` have passed; tells
 * `wait.onLocked` once, when the lock has been held past a few quick retries (processes starting together on a new
 * database take turns for a moment, which is not worth a line). The step must be safe to repeat.
 */
async function untilUnlocked<T>(step: () => T | Promise<T>, path: string, wait: LockWait): Promise<T> {
  const waitMs = wait.ms ?? DEFAULT_LOCK_WAIT_MS
  const started = Date.now()
  let told = false
  for (;;) {
    try {
      return await step()
    } catch (error) {
      if (!isBusy(error)) throw error
      const waited = Date.now() - started
      if (waited >= waitMs)
        throw new DatabaseLockedError(
          `database ${path} stayed locked by another process for ${waitMs / 1000} s; stop that process (or let it finish) and start again`,
          { cause: error },
        )
      if (!told && waited >= 2 * START_BUSY_TIMEOUT_MS) {
        told = true
        wait.onLocked?.(
          `database ${path} is locked by another process; waiting up to ${waitMs / 1000} s for it`,
        )
      }
      await new Promise((resolve) => setTimeout(resolve, 25 + Math.random() * 75))
    }
  }
}

/** `error` from opening `path`, saying which file could not be used when the driver does not. */
function unreadable(error: unknown, path: string): unknown {
  if (!(error instanceof Error) || error instanceof DatabaseLockedError) return error
  // A classified fault (a full disk) carries the API's text; the driver's own says what happened to the file.
  const reason = isDatabaseFault(error) && error.cause instanceof Error ? error.cause : error
  return new Error(`database ${path} cannot be used: ${reason.message}`, { cause: error })
}

/**
 * A local database's settings: WAL (reading the mode takes no lock; changing it does) and every commit synced to disk
 * (`synchronous = FULL`: an acknowledged write survives a power cut; group commits share the sync instead of
 * relaxing it). Temporary files in memory (`temp_store = MEMORY`): each write's statement journal and each sort's
 * scratch space are never needed after a crash, yet by default went to a file (about 47 pwrite64 calls per
 * registration, 43% of its database CPU; bench/CHANGES.md). Statements wait briefly on another process's lock while
 * starting; the caller sets the busy timeout of serving (none) after.
 */
function configureLocal(connection: Connection): void {
  connection.exec(`PRAGMA busy_timeout = ${START_BUSY_TIMEOUT_MS}`)
  connection.exec('PRAGMA synchronous = FULL')
  connection.exec('PRAGMA temp_store = MEMORY')
  const [mode] = connection.values('PRAGMA journal_mode')
  if (String(mode?.[0]).toLowerCase() !== 'wal') connection.exec('PRAGMA journal_mode = WAL')
}

/** Opens, configures and migrates; for a local file, takes the write lock once, as serving will. */
async function openAndMigrate(
  where: Location,
  authToken: string | undefined,
  driver: Driver,
  wait: LockWait,
) {
  const connection = connectionOver(await openNative(where, authToken, driver))
  try {
    if (where.local) await untilUnlocked(() => configureLocal(connection), where.path, wait)
    const migrations = await untilUnlocked(() => applyMigrations(connection, 0), where.path, wait)
    // The first write of a start indexes the search tail a crash (or a stop before its pass) left (searchIndex.ts);
    // for a local file it also tells a lock held by another process before start-up writes (secrets) need it.
    await untilUnlocked(
      () => connection.writeTransaction(() => indexSearchTail(connection), 0),
      where.path,
      wait,
    )
    if (where.local) {
      // Serving never waits inside SQLite: its busy handler would hold the event loop (connection.ts `whenUnlocked`).
      connection.exec('PRAGMA busy_timeout = 0')
    }
    return { connection, migrations }
  } catch (error) {
    connection.close()
    throw error
  }
}

/**
 * Opens a libSQL database (`file:…`, `:memory:`, `libsql://…`), creating the data folder, setting WAL, a busy timeout
 * and full sync, and applying pending migrations. A lock another process holds is waited on for `wait.ms` (telling
 * `wait.onLocked` once), then a `DatabaseLockedError`; a file that is not a database fails at once, naming it.
 * `driver` picks the SQLite binding (drivers.ts; by default Bun's own for local files on Bun, libsql-js elsewhere).
 * @example const database = await openDatabase('file:./data/market.db')
 */
export async function openDatabase(
  url: string,
  authToken?: string,
  driver: Driver = 'auto',
  wait: LockWait = {},
): Promise<Database> {
  const where = location(url)
  const { path, local } = where
  if (local && path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  try {
    const { connection, migrations } = await openAndMigrate(where, authToken, driver, wait)
    return { connection, db: connection.db, migrations, close: () => connection.close() }
  } catch (error) {
    throw unreadable(error, path)
  }
}
