import { strictEqual as equal, ok, deepStrictEqual as same } from 'node:assert/strict'
import { type StoreTest, sampleAgent, type WithStore } from './fixtures.ts'

/** The conformance cases of the KvStore: shared values updated atomically. */
export function kvStoreCases(test: StoreTest, withStore: WithStore): void {
  test(
    'behavior: key-value entries are written, read, removed, and updated atomically',
    withStore(async (store) => {
      equal(await store.kvGet('missing'), null)
      await store.kvPut('setting', { secret: 'abc', n: 1 })
      same(await store.kvGet('setting'), { secret: 'abc', n: 1 })
      await store.kvPut('setting', 'replaced')
      equal(await store.kvGet('setting'), 'replaced')
      await store.kvDelete('setting')
      equal(await store.kvGet('setting'), null)
      const kept = await store.kvUpdate('once', (current) =>
        current === null ? { op: 'set', value: 'first', result: 'wrote' } : { op: 'noop', result: 'kept' },
      )
      equal(kept, 'wrote')
      equal(await store.kvUpdate('once', () => ({ op: 'delete', result: 'gone' })), 'gone')
      equal(await store.kvGet('once'), null)
      await store.kvPut('counter', 0)
      const claims = await Promise.all(
        Array.from({ length: 10 }, () =>
          store.kvUpdate('counter', (current) => ({ op: 'set', value: Number(current) + 1, result: true })),
        ),
      )
      equal(claims.length, 10)
      equal(await store.kvGet('counter'), 10)
      await store.insertAgent(sampleAgent(), [])
      ok(await store.getAgent('sample-agent'), 'the store keeps its data after atomic updates')
    }),
  )

  test(
    'behavior: entries with an expiry are swept once it has passed, oldest first and at most `limit` at a time',
    withStore(async (store) => {
      const at = (ms: number) => new Date(Date.UTC(2026, 5, 1) + ms)
      await store.kvPut('first', 1, { expiresAt: at(1_000) })
      await store.kvUpdate('second', () => ({ op: 'set', value: 2, result: null, expiresAt: at(2_000) }))
      await store.kvPut('later', 3, { expiresAt: at(10_000) })
      await store.kvPut('kept', 4)
      equal(await store.kvSweepExpired(at(999), 10), 0)
      // Past its expiry an entry is still read until a sweep removes it (callers keep an exact end in the value).
      equal(await store.kvGet('first'), 1)
      equal(await store.kvSweepExpired(at(5_000), 1), 1)
      same([await store.kvGet('first'), await store.kvGet('second')], [null, 2])
      equal(await store.kvSweepExpired(at(5_000), 10), 1)
      same([await store.kvGet('second'), await store.kvGet('later'), await store.kvGet('kept')], [null, 3, 4])
      equal(await store.kvSweepExpired(at(1e12), 0), 0)
      equal(await store.kvGet('later'), 3)
    }),
  )

  test(
    "behavior: a write without an expiry keeps the entry's; one with an expiry pushes it forward or clears it",
    withStore(async (store) => {
      const at = (ms: number) => new Date(Date.UTC(2026, 5, 1) + ms)
      await store.kvPut('charged', { n: 1 }, { expiresAt: at(1_000) })
      await store.kvUpdate('charged', () => ({
        op: 'set',
        value: { n: 2 },
        result: null,
        expiresAt: at(5_000),
      }))
      await store.kvPut('plain', 'a', { expiresAt: at(1_000) })
      await store.kvPut('plain', 'b')
      await store.kvUpdate('plain', () => ({ op: 'set', value: 'c', result: null }))
      await store.kvPut('cleared', 'x', { expiresAt: at(1_000) })
      await store.kvUpdate('cleared', () => ({ op: 'set', value: 'y', result: null, expiresAt: null }))
      await store.kvPut('renewed', 'r', { expiresAt: at(1_000) })
      await store.kvDelete('renewed')
      await store.kvPut('renewed', 'r')
      equal(await store.kvSweepExpired(at(2_000), 10), 1)
      same(
        [
          await store.kvGet('charged'),
          await store.kvGet('plain'),
          await store.kvGet('cleared'),
          await store.kvGet('renewed'),
        ],
        [{ n: 2 }, null, 'y', 'r'],
      )
      equal(await store.kvSweepExpired(at(5_000), 10), 1)
      equal(await store.kvGet('charged'), null)
      equal(await store.kvSweepExpired(at(1e13), 10), 0)
    }),
  )
  test(
    'behavior: several keys are updated together, all or none, and a key changed meanwhile makes the update run again',
    withStore(async (store) => {
      await store.kvPut('held', 'old')
      const seen = await store.kvUpdateAll(['fresh', 'held', 'absent'], (current) => ({
        writes: [{ op: 'set', value: { n: 1 } }, { op: 'delete' }, { op: 'noop' }],
        result: current,
      }))
      same(seen, [null, 'old', null])
      same([await store.kvGet('fresh'), await store.kvGet('held')], [{ n: 1 }, null])
      // Ten claims of the same two keys at once: one takes both, the others see them taken and write nothing.
      const claims = await Promise.all(
        Array.from({ length: 10 }, (_, index) =>
          store.kvUpdateAll(['first', 'second'], ([first, second]) =>
            first === null && second === null
              ? {
                  writes: [
                    { op: 'set', value: index },
                    { op: 'set', value: index },
                  ],
                  result: true,
                }
              : { writes: [], result: false },
          ),
        ),
      )
      equal(claims.filter(Boolean).length, 1)
      const winner = claims.indexOf(true)
      same([await store.kvGet('first'), await store.kvGet('second')], [winner, winner])
      // Ten increments of two counters at once: each one lands on both, none is lost.
      await store.kvPut('left', 0)
      await Promise.all(
        Array.from({ length: 10 }, () =>
          store.kvUpdateAll(['left', 'right'], ([left, right]) => ({
            writes: [
              { op: 'set', value: Number(left) + 1 },
              { op: 'set', value: Number(right ?? 0) + 1 },
            ],
            result: null,
          })),
        ),
      )
      same([await store.kvGet('left'), await store.kvGet('right')], [10, 10])
    }),
  )

  test(
    'behavior: an update of several keys keeps or replaces each expiry as kvUpdate does',
    withStore(async (store) => {
      const at = (ms: number) => new Date(Date.UTC(2026, 5, 1) + ms)
      await store.kvPut('kept', 'a', { expiresAt: at(1_000) })
      await store.kvPut('pushed', 'b', { expiresAt: at(1_000) })
      await store.kvUpdateAll(['kept', 'pushed', 'new'], () => ({
        writes: [
          { op: 'set', value: 'a2' },
          { op: 'set', value: 'b2', expiresAt: at(5_000) },
          { op: 'set', value: 'c', expiresAt: at(1_000) },
        ],
        result: null,
      }))
      equal(await store.kvSweepExpired(at(2_000), 10), 2)
      same(
        [await store.kvGet('kept'), await store.kvGet('pushed'), await store.kvGet('new')],
        [null, 'b2', null],
      )
    }),
  )
}
