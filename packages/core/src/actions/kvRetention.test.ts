import { describe, expect, test } from 'bun:test'
import { memoryStore } from '../adapters/memoryStore.ts'
import { defaultConfig } from '../Config.ts'
import { Marketplace } from '../Marketplace.ts'
import { manualClock } from '../ports/Clock.ts'
import { forgetAt } from './kvRetention.ts'

// Rows listed to be forgotten at a time are removed by the expiry pass (the host's timer) once that time's hour has
// ended, never before; a pass after a long stop catches up in bounded steps.

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
    await forgetAt(store, 'marker', new Date(clock.now().getTime() + 5 * HOUR), clock.now())
    clock.advance(5 * HOUR - 1)
    await m.expireUnpaidTasks()
    expect(await store.kvGet('marker')).not.toBeNull()
    clock.advance(2 * HOUR)
    await m.expireUnpaidTasks()
    expect(await store.kvGet('marker')).toBeNull()
  })

  test('behavior: a time already past keeps the row at least until the next hour; a time past any date keeps it', async () => {
    const { store, clock, market: m } = market()
    await m.expireUnpaidTasks()
    await store.kvPut('late', 1)
    await store.kvPut('forever', 2)
    await forgetAt(store, 'late', new Date(clock.now().getTime() - 10 * HOUR), clock.now())
    await forgetAt(store, 'forever', new Date(Number.NaN), clock.now())
    await m.expireUnpaidTasks()
    expect(await store.kvGet('late')).not.toBeNull()
    clock.advance(2 * HOUR)
    await m.expireUnpaidTasks()
    expect([await store.kvGet('late'), await store.kvGet('forever')]).toEqual([null, 2])
  })

  test('behavior: after a stop of 60 days the passes catch up two weeks at a time and remove the row', async () => {
    const { store, clock, market: m } = market()
    await m.expireUnpaidTasks()
    await store.kvPut('marker', 1)
    await forgetAt(store, 'marker', new Date(clock.now().getTime() + 30 * 24 * HOUR), clock.now())
    clock.advance(60 * 24 * HOUR)
    let passes = 0
    while ((await store.kvGet('marker')) !== null && passes < 10) {
      await m.expireUnpaidTasks()
      passes++
    }
    expect(await store.kvGet('marker')).toBeNull()
    expect(passes).toBe(3)
  })
})
