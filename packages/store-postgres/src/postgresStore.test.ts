import { afterAll, describe, expect, test } from 'bun:test'
import { sampleAgent, sampleEvent, storeSuite } from '@agentmarket/core/testing'
import postgres from 'postgres'
import { startMigratedPostgres } from '../../../tests/support/postgres.ts'
import { openPostgres } from './open.ts'
import { postgresStore } from './postgresStore.ts'

const server = await startMigratedPostgres()
afterAll(() => server.stop())

storeSuite({ describe, test }, 'postgresStore', async () =>
  postgresStore(await openPostgres(await server.freshUrl(), { max: 4 })),
)

describe('postgresStore across nodes', () => {
  /** Two stores (two nodes' pools) on one fresh database. */
  const twoNodes = async () => {
    const url = await server.freshUrl()
    return [
      await postgresStore(await openPostgres(url, { max: 4 })),
      await postgresStore(await openPostgres(url, { max: 4 })),
    ]
  }

  test('behavior: an event committed after a later-numbered one still reaches a reader paging by id', async () => {
    const url = await server.freshUrl()
    const store = await postgresStore(await openPostgres(url, { max: 4 }))
    const raw = postgres(url, { max: 2, onnotice: () => {} })
    const event = (summary: string) =>
      raw`insert into events (kind, agent, at, summary, data) values ('agent.updated', 'a', 1, ${summary}, '{}')`
    // The slow transaction draws the lower seq but commits last.
    let finishSlow = () => {}
    const slowOpen = new Promise<void>((opened) => {
      void raw.begin(async (tx) => {
        await tx`insert into events (kind, agent, at, summary, data) values ('agent.updated', 'a', 1, 'slow', '{}')`
        opened()
        await new Promise<void>((resolve) => {
          finishSlow = resolve
        })
      })
    })
    await slowOpen
    await event('fast')
    // Any write that public reads or the feed may show runs the sequencer (a kv write does not).
    await store.insertAgent(sampleAgent({ name: 'nudge-1', apiKeyHash: 'k-1', pairingCodeHash: 'p-1' }), [])
    // The fast event waits behind the open transaction: nothing is shown that a later commit could precede.
    expect(await store.listEvents({ limit: 10 })).toEqual([])
    finishSlow()
    await Bun.sleep(50)
    await store.insertAgent(sampleAgent({ name: 'nudge-2', apiKeyHash: 'k-2', pairingCodeHash: 'p-2' }), [])
    const shown = await store.listEvents({ after: '0', limit: 10 })
    expect(shown.map((shownEvent) => [shownEvent.id, shownEvent.summary])).toEqual([
      ['2', 'fast'],
      ['1', 'slow'],
    ])
    await raw.end()
    await store.close()
  })

  test('behavior: another node sees a write in its change version and its feed as soon as the notices arrive', async () => {
    const [writer, reader] = await twoNodes()
    if (!writer || !reader) throw new Error('two stores')
    const before = await reader.changeVersion?.()
    let announced = 0
    const stop = reader.watchEvents?.(() => {
      announced++
    })
    await Bun.sleep(50)
    await writer.insertAgent(sampleAgent({ name: 'elsewhere' }), [sampleEvent()])
    const waited = performance.now()
    while (
      (announced === 0 || (await reader.changeVersion?.()) === before) &&
      performance.now() - waited < 2_000
    )
      await Bun.sleep(5)
    expect(announced).toBeGreaterThan(0)
    expect(await reader.changeVersion?.()).not.toBe(before)
    expect((await reader.listEvents({ limit: 1 })).length).toBe(1)
    stop?.()
    await Promise.all([writer.close(), reader.close()])
  })
})
