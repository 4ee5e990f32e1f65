import { afterAll, describe, expect, test } from 'bun:test'
import { rateBucketsSuite } from '@agentmarket/core/testing'
import { startMigratedPostgres } from '../../../tests/support/postgres.ts'
import { openPostgres, type PostgresDatabase } from './open.ts'
import { postgresRateBuckets } from './rateBuckets.ts'

const server = await startMigratedPostgres()
const opened: PostgresDatabase[] = []
const open = async (url?: string) => {
  const database = await openPostgres(url ?? (await server.freshUrl()), { max: 4 })
  opened.push(database)
  return database
}
afterAll(async () => {
  await Promise.all(opened.map((database) => database.close()))
  await server.stop()
})

rateBucketsSuite({ describe, test }, 'postgresRateBuckets', async () => postgresRateBuckets(await open()))

describe('postgresRateBuckets', () => {
  test('behavior: two pools (two nodes) on one database share each bucket exactly', async () => {
    const url = await server.freshUrl()
    const [first, second] = [postgresRateBuckets(await open(url)), postgresRateBuckets(await open(url))]
    const policy = { name: 'shared', limit: 50, windowSeconds: 60 }
    const now = Date.parse('2026-01-01T00:00:00Z')
    const decisions = await Promise.all(
      Array.from({ length: 80 }, (_, index) => (index % 2 ? first : second).take('k', policy, 1, now)),
    )
    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(50)
  })
})
