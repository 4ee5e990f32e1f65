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
}
