import type { MigrationMeta } from 'drizzle-orm/migrator'
import type { Sql } from 'postgres'
import embeddedMigrations from './migrations.json' with { type: 'json' }

// Written from the drizzle folder by scripts/embed-migrations.ts, so they travel inside any bundle or binary.
const MIGRATIONS: MigrationMeta[] = embeddedMigrations
// The same bookkeeping table as store-libsql's (and drizzle-kit's), so both stores report migrations alike.
const TABLE = '"__drizzle_migrations"'
// Any fixed number: every node takes this advisory lock before migrating, so nodes starting together take turns.
const MIGRATION_LOCK = 8_400_101

/**
 * What a migration run did: the numbers of the migrations it applied, in order (1 is drizzle's `0001_….sql`), and
 * how many migrations this code knows.
 */
export type MigrationReport = { applied: number[]; known: number }

/**
 * Applies the embedded migrations that the database has not seen, all in one transaction (PostgreSQL's DDL is
 * transactional: a failed migration leaves nothing behind), under an advisory lock so nodes migrate one at a time.
 * Each statement may run `statementMs` (default 5 minutes; 0 for no limit), whatever the pool's own limit.
 * @example const { applied } = await applyMigrations(sql, { statementMs: 60_000 })
 */
export async function applyMigrations(
  sql: Sql,
  { statementMs = 300_000 }: { statementMs?: number } = {},
): Promise<MigrationReport> {
  return sql.begin(async (tx) => {
    await tx.unsafe(`set local statement_timeout = ${Math.max(0, Math.floor(statementMs))}`)
    // Nodes starting together wait their turn for the lock however long the pool's lock_timeout is.
    await tx.unsafe('set local lock_timeout = 0')
    await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK})`
    await tx.unsafe(
      `CREATE TABLE IF NOT EXISTS ${TABLE} (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)`,
    )
    const [last] = await tx.unsafe(`SELECT created_at FROM ${TABLE} ORDER BY created_at DESC LIMIT 1`)
    const appliedUpTo = Number(last?.created_at ?? -1)
    const pending = MIGRATIONS.map((migration, number) => ({ migration, number })).filter(
      ({ migration }) => migration.folderMillis > appliedUpTo,
    )
    for (const { migration } of pending) {
      for (const statement of migration.sql) if (statement.trim()) await tx.unsafe(statement)
      await tx.unsafe(`INSERT INTO ${TABLE} (hash, created_at) VALUES ($1, $2)`, [
        migration.hash,
        migration.folderMillis,
      ])
    }
    return { applied: pending.map(({ number }) => number), known: MIGRATIONS.length }
  })
}
