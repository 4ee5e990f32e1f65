import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { type Client, createClient } from '@libsql/client'
import { drizzle, type LibSQLDatabase } from 'drizzle-orm/libsql'
import { applyMigrations, type MigrationReport } from './migrate.ts'

/** An open, migrated database, and what migrating it at this opening did. */
export type Database = { client: Client; db: LibSQLDatabase; migrations: MigrationReport; close(): void }

/** The file path of a `file:` URL, or null for other URLs. */
function filePath(url: string): string | null {
  if (!url.startsWith('file:')) return null
  const path = url.slice('file:'.length).split('?')[0] ?? ''
  return path.startsWith('//') ? new URL(url).pathname : path
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
 * @example await whileBusy(() => migrate(client))
 */
export async function whileBusy<T>(step: () => Promise<T>, attempts = 40): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step()
    } catch (error) {
      if (!isBusy(error) || attempt >= attempts) throw error
      await new Promise((resolve) => setTimeout(resolve, 25 + Math.random() * 100))
    }
  }
}

/** Puts a file database in WAL mode unless it already is (reading the mode takes no lock; changing it does). */
async function useWal(client: Client): Promise<void> {
  const mode = await client.execute('PRAGMA journal_mode')
  if (String(mode.rows[0]?.[0]).toLowerCase() !== 'wal') await client.execute('PRAGMA journal_mode = WAL')
}

/**
 * Opens a libSQL database (`file:…`, `:memory:`, `libsql://…`), creating the data folder,
 * setting WAL and a busy timeout, and applying pending migrations (taking turns with other processes starting on it).
 * @example const database = await openDatabase('file:./data/market.db')
 */
export async function openDatabase(url: string, authToken?: string): Promise<Database> {
  const path = filePath(url)
  if (path && path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const client = createClient({ url, authToken, timeout: 5000 })
  if (path && path !== ':memory:') await whileBusy(() => useWal(client))
  const db = drizzle(client)
  const migrations = await whileBusy(() => applyMigrations(client))
  return { client, db, migrations, close: () => client.close() }
}
