import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { type Client, createClient } from '@libsql/client'
import { drizzle, type LibSQLDatabase } from 'drizzle-orm/libsql'
import { migrate } from './migrate.ts'

/** An open, migrated database. */
export type Database = { client: Client; db: LibSQLDatabase; close(): void }

/** The file path of a `file:` URL, or null for other URLs. */
function filePath(url: string): string | null {
  if (!url.startsWith('file:')) return null
  const path = url.slice('file:'.length).split('?')[0] ?? ''
  return path.startsWith('//') ? new URL(url).pathname : path
}

/**
 * Opens a libSQL database (`file:…`, `:memory:`, `libsql://…`), creating the data folder,
 * setting WAL and a busy timeout, and applying pending migrations.
 * @example const database = await openDatabase('file:./data/market.db')
 */
export async function openDatabase(url: string, authToken?: string): Promise<Database> {
  const path = filePath(url)
  if (path && path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const client = createClient({ url, authToken, timeout: 5000 })
  if (path && path !== ':memory:') await client.execute('PRAGMA journal_mode = WAL')
  const db = drizzle(client)
  await migrate(client)
  return { client, db, close: () => client.close() }
}
