import type { MigrationMeta } from 'drizzle-orm/migrator'
import type { Connection } from './connection.ts'
import embeddedMigrations from './migrations.json' with { type: 'json' }

// Written from the drizzle folder by scripts/embed-migrations.ts, so they travel inside any bundle or binary.
const MIGRATIONS: MigrationMeta[] = embeddedMigrations
// drizzle's own bookkeeping table, so `drizzle-kit migrate` and this agree on what is applied.
const TABLE = '"__drizzle_migrations"'

/**
 * What a migration run did: the numbers of the migrations it applied, in order (7 is drizzle's `0007_….sql`), and
 * how many migrations this code knows.
 */
export type MigrationReport = { applied: number[]; known: number }

/**
 * Applies the embedded migrations that the database has not seen, in one write transaction.
 * BEGIN IMMEDIATE comes before reading what is applied, so processes starting together migrate one at a time.
 * `lockWaitMs` bounds the wait for another process's write lock (connection.ts `writeTransaction`).
 * @example const { applied } = await applyMigrations(connection)
 */
export async function applyMigrations(connection: Connection, lockWaitMs?: number): Promise<MigrationReport> {
  connection.exec(
    `CREATE TABLE IF NOT EXISTS ${TABLE} (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)`,
  )
  return connection.writeTransaction(() => {
    const [last] = connection.values(`SELECT created_at FROM ${TABLE} ORDER BY created_at DESC LIMIT 1`)
    const appliedUpTo = Number(last?.[0] ?? -1)
    const pending = MIGRATIONS.map((migration, number) => ({ migration, number })).filter(
      ({ migration }) => migration.folderMillis > appliedUpTo,
    )
    for (const { migration } of pending) {
      for (const statement of migration.sql) if (statement.trim()) connection.exec(statement)
      connection.run(`INSERT INTO ${TABLE} ("hash", "created_at") VALUES (?, ?)`, [
        migration.hash,
        migration.folderMillis,
      ])
    }
    return { applied: pending.map(({ number }) => number), known: MIGRATIONS.length }
  }, lockWaitMs)
}

/** Applies the pending migrations (see `applyMigrations`) and answers how many it applied. */
export async function migrate(connection: Connection): Promise<number> {
  return (await applyMigrations(connection)).applied.length
}
