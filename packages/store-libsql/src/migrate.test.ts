import { describe, expect, test } from 'bun:test'
import { createClient } from '@libsql/client'
import { readMigrationFolder } from '../scripts/embed-migrations.ts'
import { migrate } from './migrate.ts'
import embedded from './migrations.json' with { type: 'json' }

describe('migrate', () => {
  test('behavior: the embedded migrations are the drizzle folder as drizzle reads it (run bun run db:generate)', () => {
    expect(embedded).toEqual(JSON.parse(JSON.stringify(readMigrationFolder())))
  })

  test('behavior: a new database gets every migration once; a second run applies none', async () => {
    const client = createClient({ url: ':memory:' })
    expect(await migrate(client)).toBe(embedded.length)
    expect(await migrate(client)).toBe(0)
    const tables = await client.execute(
      "select name from sqlite_master where type = 'table' and name = 'tasks'",
    )
    expect(tables.rows).toHaveLength(1)
    client.close()
  })
})
