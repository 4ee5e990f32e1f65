import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-open-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

// Each process opens (WAL + migrations) and writes once, as a server does at start-up.
const OPENER = `
import { openDatabase } from '${join(import.meta.dir, 'open.ts')}'
const database = await openDatabase(process.argv[2])
// A lone write waits for the others' locks as the store's do (connection.ts \`unlocked\`): serving has no busy timeout.
await database.connection.unlocked(() =>
  database.connection.run('INSERT INTO kv (key, value) VALUES (?, ?)', [process.argv[3], '1']),
)
database.close()
`

describe('openDatabase from several processes at once', () => {
  test('behavior: processes starting together on a new database all open it and migrate it once', async () => {
    const script = join(folder, 'open.ts')
    await Bun.write(script, OPENER)
    for (let round = 0; round < 3; round++) {
      const url = `file:${join(folder, `together-${round}.db`)}`
      const children = Array.from({ length: 4 }, (_, index) =>
        Bun.spawn(['bun', script, url, `opener-${index}`], { stdout: 'ignore', stderr: 'pipe' }),
      )
      const exits = await Promise.all(children.map((child) => child.exited))
      const errors = await Promise.all(children.map((child) => new Response(child.stderr).text()))
      expect(exits, errors.join('\n')).toEqual([0, 0, 0, 0])
    }
    const { openDatabase } = await import('./open.ts')
    const database = await openDatabase(`file:${join(folder, 'together-0.db')}`)
    const applied = database.connection.values('SELECT count(*) FROM "__drizzle_migrations"')
    const { default: migrations } = await import('./migrations.json')
    expect(Number(applied[0]?.[0])).toBe(migrations.length)
    expect(database.connection.values('SELECT count(*) FROM kv')[0]?.[0]).toBe(4)
    database.close()
  })
})
