import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { type Connection, connectionOver, type SqlDatabase } from './connection.ts'
import { type Driver, type Location, openNative } from './drivers.ts'
import { applyMigrations, type MigrationReport } from './migrate.ts'

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

/** True for SQLite's "database is locked" family, which SQLite may return at once instead of waiting. */
function isBusy(error: unknown): boolean {
  return (
    error instanceof Error &&
    /SQLITE_BUSY|database is locked/i.test(`${error.message} ${(error as { code?: string }).code}`)
  )
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
 * A local database's settings: WAL (reading the mode takes no lock; changing it does), writers wait up to 5 s for
 * another process's lock, and every commit is synced to disk (`synchronous = FULL`: an acknowledged write survives a
 * power cut; group commits share the sync instead of relaxing it).
 */
function configureLocal(connection: Connection): void {
  connection.exec('PRAGMA busy_timeout = 5000')
  connection.exec('PRAGMA synchronous = FULL')
  const [mode] = connection.values('PRAGMA journal_mode')
  if (String(mode?.[0]).toLowerCase() !== 'wal') connection.exec('PRAGMA journal_mode = WAL')
}

/**
 * Opens a libSQL database (`file:…`, `:memory:`, `libsql://…`), creating the data folder, setting WAL, a busy timeout
 * and full sync, and applying pending migrations (taking turns with other processes starting on it). `driver` picks
 * the SQLite binding (drivers.ts; by default Bun's own for local files on Bun, libsql-js elsewhere).
 * @example const database = await openDatabase('file:./data/market.db')
 */
export async function openDatabase(
  url: string,
  authToken?: string,
  driver: Driver = 'auto',
): Promise<Database> {
  const where = location(url)
  const { path, local } = where
  if (local && path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const connection = connectionOver(await openNative(where, authToken, driver))
  if (local) await whileBusy(() => configureLocal(connection))
  const migrations = await whileBusy(() => applyMigrations(connection))
  return { connection, db: connection.db, migrations, close: () => connection.close() }
}
