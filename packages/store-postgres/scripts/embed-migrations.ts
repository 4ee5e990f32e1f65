/**
 * Writes drizzle's migration folder as `src/migrations.json`, so every host (Bun, Node, the single binary) carries the
 * migrations inside the code. `bun run db:generate:postgres` runs it after drizzle-kit.
 * Usage: bun packages/store-postgres/scripts/embed-migrations.ts
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { readMigrationFiles } from 'drizzle-orm/migrator'

const file = join(import.meta.dir, '../src/migrations.json')
writeFileSync(
  file,
  `${JSON.stringify(readMigrationFiles({ migrationsFolder: join(import.meta.dir, '../drizzle') }), null, 2)}\n`,
)
console.log(`wrote ${file}`)
