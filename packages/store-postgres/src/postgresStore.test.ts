import { afterAll, describe, test } from 'bun:test'
import { storeSuite } from '@agentmarket/core/testing'
import { startMigratedPostgres } from '../../../tests/support/postgres.ts'
import { openPostgres } from './open.ts'
import { postgresStore } from './postgresStore.ts'

const server = await startMigratedPostgres()
afterAll(() => server.stop())

storeSuite({ describe, test }, 'postgresStore', async () =>
  postgresStore(await openPostgres(await server.freshUrl(), { max: 4 })),
)
