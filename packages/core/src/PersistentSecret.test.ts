import { describe, expect, test } from 'bun:test'
import { keptSecret } from './PersistentSecret.ts'
import type { KvStore } from './ports/KvStore.ts'
import { cryptoRandom } from './ports/Random.ts'

/** A one-map store counting its reads and writes; `down` makes every call fail. */
function countingStore() {
  const values = new Map<string, unknown>()
  const counts = { reads: 0, writes: 0, down: false }
  const store = {
    kvGet: async (key: string) => {
      counts.reads++
      if (counts.down) throw new Error('store down')
      return values.get(key) ?? null
    },
    kvUpdate: async (key, change) => {
      if (counts.down) throw new Error('store down')
      const step = change(values.get(key) ?? null)
      if (step.op === 'set') {
        counts.writes++
        values.set(key, step.value)
      }
      return step.result
    },
  } as Pick<KvStore, 'kvGet' | 'kvUpdate'> as KvStore
  return { store, counts }
}

describe('keptSecret', () => {
  test('behavior: existing never makes the secret, and reads again while none is kept', async () => {
    const { store, counts } = countingStore()
    const secret = keptSecret(store, cryptoRandom(), 'setting:test')
    expect(await secret.existing()).toBeNull()
    expect(await secret.existing()).toBeNull()
    expect(counts).toMatchObject({ reads: 2, writes: 0 })
  })

  test('behavior: made makes it once; existing then answers it without reading the store', async () => {
    const { store, counts } = countingStore()
    const secret = keptSecret(store, cryptoRandom(), 'setting:test')
    const made = await secret.made()
    expect(made).toMatch(/^0x[0-9a-f]{64}$/)
    expect(await secret.made()).toBe(made)
    expect(await secret.existing()).toBe(made)
    expect(counts).toMatchObject({ reads: 0, writes: 1 })
  })

  test('behavior: a secret made by another process is read once, then remembered', async () => {
    const { store, counts } = countingStore()
    const made = await keptSecret(store, cryptoRandom(), 'setting:test').made()
    const other = keptSecret(store, cryptoRandom(), 'setting:test')
    expect(await other.existing()).toBe(made)
    expect(await other.existing()).toBe(made)
    expect(await other.made()).toBe(made)
    expect(counts).toMatchObject({ reads: 1, writes: 1 })
  })

  test('fault: a failed load is tried again next time, not remembered', async () => {
    const { store, counts } = countingStore()
    const secret = keptSecret(store, cryptoRandom(), 'setting:test')
    counts.down = true
    await expect(secret.made()).rejects.toThrow('store down')
    await expect(secret.existing()).rejects.toThrow('store down')
    counts.down = false
    const made = await secret.made()
    expect(await secret.existing()).toBe(made)
    expect(counts.writes).toBe(1)
  })
})
