import { describe, expect, test } from 'bun:test'
import { memoryStore } from '../adapters/memoryStore.ts'
import { defaultConfig } from '../Config.ts'
import { Marketplace } from '../Marketplace.ts'
import { manualClock } from '../ports/Clock.ts'
import { forgetAt } from './kvRetention.ts'

// Rows set to be forgotten at a time are removed by the expiry pass (the host's timer) once that time has passed,
// never before; each pass removes a bounded number of rows.

const HOUR = 3_600_000

function market() {
  const store = memoryStore()
  const clock = manualClock('2026-06-01T12:00:00Z')
  return {
    store,
    clock,
    market: Marketplace.create({ store, clock, config: defaultConfig('https://m.example') }),
  }
}

describe('rows forgotten at a time (kvRetention)', () => {
  test('behavior: a row stays until its time has passed, then the expiry pass removes it', async () => {
    const { store, clock, market: m } = market()
    await m.expireUnpaidTasks()
    await store.kvPut('marker', { task: 't' })
    await forgetAt(store, 'marker', new Date(clock.now().getTime() + 5 * HOUR))
    clock.advance(5 * HOUR - 1)
    await m.expireUnpaidTasks()
    expect(await store.kvGet('marker')).not.toBeNull()
    clock.advance(2 * HOUR)
    await m.expireUnpaidTasks()
    expect(await store.kvGet('marker')).toBeNull()
  })

  test('behavior: a time already past lets the next pass remove the row; a time past any date keeps it', async () => {
    const { store, clock, market: m } = market()
    await store.kvPut('late', 1)
    await store.kvPut('forever', 2)
    await forgetAt(store, 'late', new Date(clock.now().getTime() - 10 * HOUR))
    await forgetAt(store, 'forever', new Date(Number.NaN))
    await forgetAt(store, 'never-written', new Date(clock.now().getTime() - HOUR))
    await m.expireUnpaidTasks()
    clock.advance(1000 * 24 * HOUR)
    await m.expireUnpaidTasks()
    expect([
      await store.kvGet('late'),
      await store.kvGet('forever'),
      await store.kvGet('never-written'),
    ]).toEqual([null, 2, null])
  })

  test('behavior: a pass removes at most its limit of rows; the next ones remove the rest', async () => {
    const { store, clock, market: m } = market()
    for (let n = 0; n < 5; n++) {
      await store.kvPut(`marker-${n}`, n)
      await forgetAt(store, `marker-${n}`, new Date(clock.now().getTime() + HOUR))
    }
    clock.advance(60 * 24 * HOUR)
    await m.expireUnpaidTasks(2)
    const left = async () =>
      (await Promise.all([0, 1, 2, 3, 4].map((n) => store.kvGet(`marker-${n}`)))).filter((v) => v !== null)
    expect(await left()).toHaveLength(3)
    await m.expireUnpaidTasks(2)
    await m.expireUnpaidTasks(2)
    expect(await left()).toHaveLength(0)
  })
})
