import { startPostgres, type TempPostgres } from '../../../tests/support/postgres.ts'
import { openPostgres } from './open.ts'

/**
 * A PostgreSQL server for this package's tests, with a migrated template database: each test gets a fresh copy
 * (CREATE DATABASE … TEMPLATE, a few milliseconds) instead of migrating an empty one.
 */
export async function testPostgres(): Promise<TempPostgres & { freshUrl(): Promise<string> }> {
  const server = await startPostgres()
  const templateUrl = await server.createDatabase()
  const template = await openPostgres(templateUrl, { max: 1 })
  await template.close()
  const templateName = new URL(templateUrl).pathname.slice(1)
  return { ...server, freshUrl: () => server.createDatabase(templateName) }
}
