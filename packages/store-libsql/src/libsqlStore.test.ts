import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type AgentListQuery, memoryStore, type Store } from '@agentmarket/core'
import { lastSeenRange } from '@agentmarket/core/rows'
import { sampleAgent, sampleSkill, storeSuite } from '@agentmarket/core/testing'
import { WALK_IN_ORDER_FROM } from './agentList.ts'
import { CHANGE_WINDOW_MS } from './changeVersion.ts'
import { libsqlStore } from './libsqlStore.ts'
import { openDatabase } from './open.ts'
import { indexSearchTail } from './searchIndex.ts'

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-store-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))
let fileNumber = 0

storeSuite({ describe, test }, 'libsqlStore on :memory:', async () =>
  libsqlStore(await openDatabase(':memory:')),
)
storeSuite({ describe, test }, 'libsqlStore on a file', async () =>
  libsqlStore(await openDatabase(`file:${join(folder, `nested/dir/store-${fileNumber++}.db`)}`)),
)
// On Bun a local file opens with Bun's SQLite; libsql-js (Node.js, remote URLs) passes the same suite.
storeSuite({ describe, test }, 'libsqlStore on a file through libsql-js', async () =>
  libsqlStore(await openDatabase(`file:${join(folder, `store-${fileNumber++}.db`)}`, undefined, 'libsql')),
)

describe('connection settings', () => {
  for (const driver of ['bun', 'libsql'] as const)
    test(`behavior: temporary files in memory, durability as before (${driver})`, async () => {
      const database = await openDatabase(
        `file:${join(folder, `pragmas-${fileNumber++}.db`)}`,
        undefined,
        driver,
      )
      const pragma = (name: string) => database.connection.values(`PRAGMA ${name}`)[0]?.[0]
      // 2 = MEMORY: statement journals and sort scratch space never touch the disk.
      expect(Number(pragma('temp_store'))).toBe(2)
      expect(String(pragma('journal_mode')).toLowerCase()).toBe('wal')
      // 2 = FULL: each commit synced before it is answered.
      expect(Number(pragma('synchronous'))).toBe(2)
      database.close()
    })
})

describe('changeVersion across connections', () => {
  test('behavior: a write through another connection (another process) shows within the window', async () => {
    const file = `file:${join(folder, `shared-${fileNumber++}.db`)}`
    const reader = libsqlStore(await openDatabase(file))
    const writer = libsqlStore(await openDatabase(file))
    const before = await reader.changeVersion?.()
    await writer.insertAgent(sampleAgent({ name: 'elsewhere' }), [])
    await Bun.sleep(CHANGE_WINDOW_MS + 1)
    expect(await reader.changeVersion?.()).not.toBe(before)
    await Promise.all([reader.close(), writer.close()])
  })

  test('behavior: any SQL write to the tables moves it, whoever writes (the triggers)', async () => {
    const database = await openDatabase(`file:${join(folder, `raw-${fileNumber++}.db`)}`)
    const store = libsqlStore(database)
    await store.insertAgent(sampleAgent({ name: 'raw' }), [])
    const before = await store.changeVersion?.()
    const other = await openDatabase(`file:${join(folder, `raw-${fileNumber - 1}.db`)}`)
    other.connection.run("update agents set bio = 'changed by hand' where name_key = 'raw'")
    await Bun.sleep(CHANGE_WINDOW_MS + 1)
    expect(await store.changeVersion?.()).not.toBe(before)
    other.close()
    await store.close()
  })
})

describe('changeVersion and reads', () => {
  test('behavior: reads leave it as it is, so the read caches keep their entries (paid offers, re-check budgets)', async () => {
    const store = libsqlStore(await openDatabase(':memory:'))
    await store.insertAgent(sampleAgent({ name: 'quiet' }), [])
    await Bun.sleep(CHANGE_WINDOW_MS + 1)
    const before = await store.changeVersion?.()
    await store.listPaidOffers(null, 10)
    await store.countPendingChecks('client')
    await store.listAgents({ limit: 10, offset: 0 })
    await Bun.sleep(CHANGE_WINDOW_MS + 1)
    expect(await store.changeVersion?.()).toBe(before)
    await store.close()
  })
})

describe('agent search through the trigram index', () => {
  test('behavior: finds by substring after insert and after a bio change, quotes and short queries included', async () => {
    const store = libsqlStore(await openDatabase(':memory:'))
    await store.insertAgent(sampleAgent({ name: 'mapper', bio: 'Does "cartography" at 50%' }), [])
    await store.insertAgent(sampleAgent({ name: 'other', bio: 'Writes poems' }), [])
    const names = async (q: string) =>
      (await store.listAgents({ q, limit: 10, offset: 0 })).agents.map((agent) => agent.name)
    expect(await names('CARTOG')).toEqual(['mapper'])
    expect(await names('"cartography"')).toEqual(['mapper'])
    expect(await names('50%')).toEqual(['mapper'])
    expect(await names('ma')).toEqual(['mapper'])
    expect(await names('poems')).toEqual(['other'])
    await store.updateAgent(
      'other',
      { bio: 'Draws maps: cartography too' },
      new Date('2026-02-01T00:00:00Z'),
      [],
    )
    expect(await names('cartography')).toEqual(['other', 'mapper'])
    expect(await names('poems')).toEqual([])
    await store.close()
  })
})

describe('search index written in batches (searchIndex.ts)', () => {
  test('behavior: indexed agents, agents changed after their pass and the tail are searched as memoryStore does', async () => {
    const database = await openDatabase(':memory:')
    const libsql = libsqlStore(database)
    const memory = memoryStore()
    const at = new Date('2026-02-01T00:00:00Z')
    const both = async (write: (store: Store) => Promise<unknown>) => {
      await write(libsql)
      await write(memory)
    }
    const pass = () => database.connection.writeTransaction(() => indexSearchTail(database.connection))
    const compare = async () => {
      for (const q of ['maps', 'poems', 'tiles', 'map', 'nothing here']) {
        const query: AgentListQuery = { q, limit: 100, offset: 0 }
        const [expected, actual] = await Promise.all([memory.listAgents(query), libsql.listAgents(query)])
        expect({ q, total: actual.total, names: actual.agents.map((agent) => agent.name) }).toEqual({
          q,
          total: expected.total,
          names: expected.agents.map((agent) => agent.name),
        })
      }
    }
    const add = (name: string, bio: string) =>
      both((store) => store.insertAgent(sampleAgent({ name, bio, lastActiveAt: at }), []))
    for (const [name, bio] of [
      ['a-indexed', 'maps'],
      ['b-renamed', 'maps'],
      ['c-withdrawn', 'maps'],
    ])
      await add(name ?? '', bio ?? '')
    await pass()
    await compare()
    await both((store) => store.updateAgent('b-renamed', { bio: 'poems' }, at, []))
    await both((store) => store.updateAgent('c-withdrawn', { listing: 'deleted' }, at, []))
    for (const [name, bio] of [
      ['d-tail', 'maps and tiles'],
      ['e-tail-renamed', 'maps'],
      ['f-tail-withdrawn', 'poems'],
    ])
      await add(name ?? '', bio ?? '')
    await both((store) => store.updateAgent('e-tail-renamed', { bio: 'tiles' }, at, []))
    await both((store) => store.updateAgent('f-tail-withdrawn', { listing: 'deleted' }, at, []))
    await compare()
    await pass()
    await compare()
    await libsql.close()
  })

  test('behavior: a pass follows a batch of registrations, and a smaller tail after the delay', async () => {
    const database = await openDatabase(':memory:')
    const store = libsqlStore(database, { searchIndex: { batch: 3, delayMs: 60_000 } })
    const tail = () => {
      const [[through, newest]] = database.connection.values(
        'select through, (select max(rowid) from agents) from agent_search_indexed',
      ) as [[number, number]]
      return newest - through
    }
    const untilIndexed = async () => {
      while (tail() > 0) await Bun.sleep(5)
    }
    await store.insertAgent(sampleAgent({ name: 'one' }), [])
    await store.insertAgent(sampleAgent({ name: 'two' }), [])
    expect(tail()).toBe(2)
    await store.insertAgent(sampleAgent({ name: 'three' }), [])
    await untilIndexed()
    await store.close()
    const timed = await openDatabase(':memory:')
    const quick = libsqlStore(timed, { searchIndex: { batch: 1_000, delayMs: 1 } })
    await quick.insertAgent(sampleAgent({ name: 'alone' }), [])
    const [[indexed]] = await (async () => {
      for (;;) {
        const rows = timed.connection.values('select count(*) from agent_search') as [[number]]
        if (rows[0][0] === 1) return rows
        await Bun.sleep(5)
      }
    })()
    expect(indexed).toBe(1)
    await quick.close()
  })

  test('error: deleting the newest agent by hand cannot hide the next one below the watermark', async () => {
    const database = await openDatabase(':memory:')
    const store = libsqlStore(database)
    await store.insertAgent(sampleAgent({ name: 'first', bio: 'maps' }), [])
    await store.insertAgent(sampleAgent({ name: 'second', bio: 'maps' }), [])
    await database.connection.writeTransaction(() => indexSearchTail(database.connection))
    database.connection.run("delete from agents where name_key = 'second'")
    // Without AUTOINCREMENT the next agent takes the deleted rowid, at or below the watermark unless the delete moved it
    // (migration 0027 does both: the watermark comes down, and an agent inserted at or below it is indexed at once).
    await store.insertAgent(sampleAgent({ name: 'third', bio: 'maps' }), [])
    const page = await store.listAgents({ q: 'maps', limit: 10, offset: 0 })
    expect({ total: page.total, names: page.agents.map((agent) => agent.name).sort() }).toEqual({
      total: 2,
      names: ['first', 'third'],
    })
    await store.close()
  })
})

describe('agent list with many matches (read walking the order, WALK_IN_ORDER_FROM)', () => {
  test('behavior: pages of a search and of a liveness filter with thousands of matches equal memoryStore', async () => {
    const libsql = libsqlStore(await openDatabase(':memory:'))
    const memory = memoryStore()
    const now = new Date('2026-01-01T12:00:00Z')
    const count = 2 * WALK_IN_ORDER_FROM
    const agents = Array.from({ length: count }, (_, index) =>
      sampleAgent({
        name: `many-${index}`,
        apiKeyHash: `k-${index}`,
        pairingCodeHash: `p-${index}`,
        bio: index % 7 === 0 ? 'other work' : 'maps and more',
        skills: [sampleSkill({ name: index % 3 ? 'Map tiles' : 'Weather' })],
        lastActiveAt: new Date(now.getTime() - (index % 97) * 1_000),
        lastSeen: new Date(now.getTime() - (index % 10) * 600_000),
      }),
    )
    await Promise.all(agents.map((agent) => libsql.insertAgent(agent, [])))
    for (const agent of agents) await memory.insertAgent(agent, [])
    const queries: AgentListQuery[] = [
      { q: 'map', limit: 20, offset: 0 },
      { q: 'map', limit: 20, offset: 1_700, sort: 'new' },
      { lastSeen: lastSeenRange('off', now), limit: 30, offset: 10 },
      { q: 'maps and', lastSeen: lastSeenRange('idle', now), limit: 25, offset: 5, sort: 'trust', now },
    ]
    for (const query of queries) {
      const [expected, actual] = await Promise.all([memory.listAgents(query), libsql.listAgents(query)])
      expect(expected.total).toBeGreaterThanOrEqual(query.q && query.lastSeen ? 1 : WALK_IN_ORDER_FROM)
      expect(actual.total).toBe(expected.total)
      expect(actual.agents.map((agent) => agent.name)).toEqual(expected.agents.map((agent) => agent.name))
    }
    await libsql.close()
  })
})
