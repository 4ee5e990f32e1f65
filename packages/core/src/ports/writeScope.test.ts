import { describe, expect, test } from 'bun:test'
import { memoryStore } from '../adapters/memoryStore.ts'
import { StorageFullError, StoreUnavailableError } from '../errors.ts'
import { inScope, RequestScope } from './requestScope.ts'
import { countWrites, inWriteScope } from './writeScope.ts'

/** A memory store whose kvPut fails with `fault` while `failing` holds, counted by countWrites. */
function faultyStore(fault: () => Error) {
  const store = memoryStore()
  const put = store.kvPut.bind(store)
  const state = { failing: false }
  store.kvPut = async (key, value) => {
    if (state.failing) throw fault()
    return put(key, value)
  }
  return { store: countWrites(store), state }
}

const codeOf = (work: Promise<unknown>) =>
  work.then(
    () => 'ok',
    (error: { code?: string }) => error.code ?? String(error),
  )

describe('write scopes: whether a store fault may say "nothing changed" is decided per request', () => {
  test('a fault before any write of the request keeps "nothing changed"; after one, the outcome is unknown', async () => {
    const { store, state } = faultyStore(() => new StoreUnavailableError('unchanged'))
    state.failing = true
    expect(await codeOf(inWriteScope(() => store.kvPut('a', 1)))).toBe('database_unavailable')
    state.failing = false
    const twoWrites = inWriteScope(async () => {
      await store.kvDelete('b')
      state.failing = true
      await store.kvPut('a', 1)
    })
    expect(await codeOf(twoWrites)).toBe('outcome_unknown')
  })

  test('a full disk after a write landed is an unknown outcome too; reads never count as writes', async () => {
    const { store, state } = faultyStore(() => new StorageFullError())
    const afterRead = inWriteScope(async () => {
      await store.kvGet('a')
      state.failing = true
      await store.kvPut('a', 1)
    })
    expect(await codeOf(afterRead)).toBe('storage_full')
    state.failing = false
    const afterWrite = inWriteScope(async () => {
      await store.kvDelete('a')
      state.failing = true
      await store.kvPut('a', 1)
    })
    expect(await codeOf(afterWrite)).toBe('outcome_unknown')
  })

  test('interleaved requests keep their own scopes, and a store used outside any scope is unchanged', async () => {
    const { store, state } = faultyStore(() => new StoreUnavailableError('unchanged'))
    let wrote = () => {}
    const written = new Promise<void>((resolve) => {
      wrote = resolve
    })
    let go = () => {}
    const gate = new Promise<void>((resolve) => {
      go = resolve
    })
    const writer = inWriteScope(async () => {
      await store.kvDelete('x')
      wrote()
      await gate
      await store.kvPut('x', 1)
    })
    await written
    state.failing = true
    // Another request, under way while the first has written: it has written nothing itself.
    expect(await codeOf(inWriteScope(() => store.kvPut('y', 1)))).toBe('database_unavailable')
    expect(await codeOf(store.kvPut('z', 1))).toBe('database_unavailable')
    go()
    expect(await codeOf(writer)).toBe('outcome_unknown')
  })

  test('a write landed inside a write scope counts for the scope around it: a fault after it is an unknown outcome', async () => {
    const { store, state } = faultyStore(() => new StoreUnavailableError('unchanged'))
    // An action's writes run in a scope of their own inside the request's (a kept Idempotency-Key's run).
    const nested = inWriteScope(async () => {
      await inWriteScope(() => store.kvDelete('n'))
      state.failing = true
      await store.kvPut('n', 1)
    })
    expect(await codeOf(nested)).toBe('outcome_unknown')
  })

  test('write scopes of one request run side by side are caught: closed out of turn, both throw; nested ones close in turn', async () => {
    const { store } = faultyStore(() => new StoreUnavailableError('unchanged'))
    let go = () => {}
    const gate = new Promise<void>((resolve) => {
      go = resolve
    })
    const request = () => new RequestScope(true, Number.POSITIVE_INFINITY, Date.now)
    // One request (its scope), two write scopes started together in it. Unnoticed, the first's close would stop the
    // second's count: a fault after the second's own write would say "nothing changed".
    const [first, second] = await inScope(request(), async () => {
      const first = inWriteScope(() => store.kvPut('first', 1))
      const second = inWriteScope(async () => {
        await gate
        await store.kvPut('second', 1)
      })
      const closedFirst = await codeOf(first)
      go()
      return [closedFirst, await codeOf(second)]
    })
    expect(first).toStartWith('WriteScopesOverlapError')
    expect(second).toStartWith('WriteScopesOverlapError')
    // Nested, as the actions open them, they close in turn.
    const nested = await inScope(request(), () =>
      codeOf(inWriteScope(() => inWriteScope(() => store.kvPut('nested', 1)))),
    )
    expect(nested).toBe('ok')
  })
})
