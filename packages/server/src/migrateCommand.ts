import { openMarketDatabase, printableDatabaseUrl } from './database.ts'
import type { Settings } from './env.ts'

/** A migration as its file in its store's drizzle folder is numbered: `0007`. */
const numbered = (number: number) => String(number).padStart(4, '0')

/**
 * `agentmarket migrate`: applies the pending migrations to the configured database, libSQL or PostgreSQL (creating a
 * file database's folder), and prints which it applied, or that there were none. Resolves to the exit code.
 * @example process.exitCode = await runMigrate(readSettings(process.env))
 */
export async function runMigrate(settings: Settings): Promise<number> {
  const database = await openMarketDatabase(settings)
  await database.close()
  const { applied, known } = database.migrations
  const where = printableDatabaseUrl(settings.databaseUrl)
  if (applied.length === 0)
    console.log(
      `agentmarket migrate: ${where} is up to date (${known} migrations, the last ${numbered(known - 1)})`,
    )
  else
    console.log(
      `agentmarket migrate: applied ${applied.length} of ${known} migrations to ${where}: ${applied.map(numbered).join(', ')}`,
    )
  return 0
}
