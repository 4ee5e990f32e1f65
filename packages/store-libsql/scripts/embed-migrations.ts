/**
 * Writes drizzle's migration folder as `src/migrations.json`, so every host (Bun, Node, the single binary) carries the
 * migrations inside the code instead of reading a folder at run time. `bun run db:generate` runs it after drizzle-kit.
 * Usage: bun packages/store-libsql/scripts/embed-migrations.ts
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type MigrationMeta, readMigrationFiles } from 'drizzle-orm/migrator'

/** Where the embedded copy lives. */
export const EMBEDDED_MIGRATIONS_FILE = join(import.meta.dir, '../src/migrations.json')

/** The migrations as drizzle reads them from the folder, in the embedded file's format. */
export function readMigrationFolder(): MigrationMeta[] {
  return readMigrationFiles({ migrationsFolder: join(import.meta.dir, '../drizzle') })
}

if (import.meta.main) {
  writeFileSync(EMBEDDED_MIGRATIONS_FILE, `${JSON.stringify(readMigrationFolder(), null, 2)}\n`)
  console.log(`wrote ${EMBEDDED_MIGRATIONS_FILE}`)
}
