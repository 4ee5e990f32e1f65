import { describe, expect, test } from 'bun:test'
import { readCache } from './ReadCache.ts'

const at = (ms: number) => new Date(ms)

describe('readCache', () => {
  test('behavior: a value answers again under the same version until it expires', async () => {
    const cache = readCache<number>()
    let computed = 0
    const compute = async () => ({ value: ++computed, validUntil: 1_000 })
    expect(await cache.read('a', 'v1', at(0), compute)).toBe(1)
    expect(await cache.read('a', 'v1', at(999), compute)).toBe(1)
    expect(await cache.read('a', 'v1', at(1_000), compute)).toBe(2)
  })

  test('behavior: another version, another key, or no version computes anew', async () => {
    const cache = readCache<number>()
    let computed = 0
    const compute = async () => ({ value: ++computed, validUntil: Number.POSITIVE_INFINITY })
    expect(await cache.read('a', 'v1', at(0), compute)).toBe(1)
    expect(await cache.read('a', 'v2', at(0), compute)).toBe(2)
    expect(await cache.read('b', 'v2', at(0), compute)).toBe(3)
    expect(await cache.read('a', undefined, at(0), compute)).toBe(4)
    expect(await cache.read('a', undefined, at(0), compute)).toBe(5)
  })

  test('behavior: past its size the oldest entry goes first', async () => {
    const cache = readCache<string>(2)
    let computed = 0
    const compute = (key: string) => async () => ({ value: `${key}${++computed}`, validUntil: 10 })
    await cache.read('a', 'v', at(0), compute('a'))
    await cache.read('b', 'v', at(0), compute('b'))
    await cache.read('c', 'v', at(0), compute('c'))
    expect(await cache.read('b', 'v', at(0), compute('b'))).toBe('b2')
    expect(await cache.read('a', 'v', at(0), compute('a'))).toBe('a4')
  })

  test('error: a failed computation is not kept', async () => {
    const cache = readCache<number>()
    await expect(cache.read('a', 'v', at(0), async () => Promise.reject(new Error('down')))).rejects.toThrow(
      'down',
    )
    expect(await cache.read('a', 'v', at(0), async () => ({ value: 7, validUntil: 10 }))).toBe(7)
  })
})

describe('readCache under a burst of misses', () => {
  test('behavior: concurrent misses of one key and version compute once; another version computes its own', async () => {
    const cache = readCache<number>()
    let computed = 0
    const compute = async () => {
      computed += 1
      await new Promise((resolve) => setTimeout(resolve, 5))
      return { value: computed, validUntil: Number.POSITIVE_INFINITY }
    }
    const now = new Date(0)
    const burst = await Promise.all(Array.from({ length: 50 }, () => cache.read('page', 'v1', now, compute)))
    expect(new Set(burst)).toEqual(new Set([1]))
    expect(computed).toBe(1)
    expect(await cache.read('page', 'v2', now, compute)).toBe(2)
  })

  test('error: a joined computation whose value expired before the joining read is computed again for it', async () => {
    const cache = readCache<string>()
    let release = () => {}
    const slow = () =>
      new Promise<{ value: string; validUntil: number }>((resolve) => {
        release = () => resolve({ value: 'old', validUntil: 1000 })
      })
    const first = cache.read('page', 'v1', new Date(0), slow)
    const late = cache.read('page', 'v1', new Date(2000), async () => ({ value: 'new', validUntil: 3000 }))
    release()
    expect(await first).toBe('old')
    expect(await late).toBe('new')
  })
})
