import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sampleAgent, storeSuite } from '@agentmarket/core/testing'
import { CHANGE_WINDOW_MS } from './changeVersion.ts'
import { libsqlStore } from './libsqlStore.ts'
import { openDatabase } from './open.ts'

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-store-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))
let fileNumber = 0

storeSuite({ describe, test }, 'libsqlStore on :memory:', async () =>
  libsqlStore(await openDatabase(':memory:')),
)
storeSuite({ describe, test }, 'libsqlStore on a file', async () =>
  libsqlStore(await openDatabase(`file:${join(folder, `nested/dir/store-${fileNumber++}.db`)}`)),
)

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
    await other.client.execute("update agents set bio = 'changed by hand' where name_key = 'raw'")
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
