import { join } from 'node:path'
import { type MigrationMeta, readMigrationFiles } from 'drizzle-orm/migrator'

/** Read at bundle time (imported `with { type: 'macro' }`), so the migrations travel inside the binary. */
export function embeddedMigrations(): MigrationMeta[] {
  return readMigrationFiles({ migrationsFolder: join(import.meta.dir, '../../drizzle') })
}
