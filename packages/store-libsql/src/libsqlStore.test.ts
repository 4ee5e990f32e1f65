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
