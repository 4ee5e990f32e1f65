import { sql } from 'drizzle-orm'
import type { LibSQLDatabase } from 'drizzle-orm/libsql'
import type { MigrationMeta } from 'drizzle-orm/migrator'
import { embeddedMigrations } from './migrations.macro.ts' with { type: 'macro' }

const MIGRATIONS: MigrationMeta[] = embeddedMigrations()
const TABLE = sql.identifier('__drizzle_migrations')

/**
 * Applies the migrations embedded at build time that the database has not seen, in one transaction.
 * Uses drizzle's own bookkeeping table, so `drizzle-kit migrate` and this agree.
 */
export async function migrate(db: LibSQLDatabase): Promise<number> {
  await db.run(
    sql`CREATE TABLE IF NOT EXISTS ${TABLE} (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)`,
  )
  const [last] = await db.values<[number, string, string]>(
    sql`SELECT id, hash, created_at FROM ${TABLE} ORDER BY created_at DESC LIMIT 1`,
  )
  const pending = MIGRATIONS.filter((migration) => !last || Number(last[2]) < migration.folderMillis)
  const statements = pending.flatMap((migration) => [
    ...migration.sql.map((text) => db.run(sql.raw(text))),
    db.run(
      sql`INSERT INTO ${TABLE} ("hash", "created_at") VALUES (${migration.hash}, ${migration.folderMillis})`,
    ),
  ])
  // session.migrate runs them on one connection with foreign keys off, inside one transaction.
  if (statements.length)
    await (db as unknown as { session: { migrate(s: unknown[]): Promise<void> } }).session.migrate(statements)
  return pending.length
}
