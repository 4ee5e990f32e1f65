import { afterEach, describe, expect, test } from 'bun:test'
import { AsyncLocalStorage } from 'node:async_hooks'
import { memoryStore } from '../adapters/memoryStore.ts'
import { defaultConfig } from '../Config.ts'
import { Marketplace } from '../Marketplace.ts'
import { createFetchHandler } from '../routes/fetchHandler.ts'
import { currentRequest } from './requestScope.ts'

// Issue 41: every request's scope costs it an AsyncLocalStorage.run, and every await inside each scope open carries
// it along. A request keeps one scope (its chain budget, its writes, what the stores key by it), entered once, whatever
// it does: counted here, not timed.

const base = 'http://market.test'
const { run } = AsyncLocalStorage.prototype

afterEach(() => {
  AsyncLocalStorage.prototype.run = run
})

/** Counts the scopes entered (an AsyncLocalStorage.run with a store; leaving every scope, `exit`, is not one). */
function countScopes() {
  const entered = { count: 0 }
  AsyncLocalStorage.prototype.run = function (
    this: AsyncLocalStorage<unknown>,
    store: unknown,
    ...rest: unknown[]
  ) {
    if (store !== undefined) entered.count++
    return (run as (...values: unknown[]) => unknown).call(this, store, ...rest)
  } as typeof run
  return entered
}

/** A market with a store that tells, at each call, whether it ran as a request. */
function watchedMarket() {
  const scoped: boolean[] = []
  const store = new Proxy(memoryStore(), {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        scoped.push(currentRequest() !== null)
        return value.apply(target, args)
      }
    },
  })
  const market = Marketplace.create({ store, config: defaultConfig(base) })
  return { handler: createFetchHandler(market), scoped }
}

/** One JSON request to `handler`. */
function send(
  handler: ReturnType<typeof createFetchHandler>,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const init = body === undefined ? {} : { body: JSON.stringify(body) }
  return handler.fetch(
    new Request(`${base}${path}`, {
      method,
      ...init,
      headers: { 'content-type': 'application/json', ...headers },
    }),
  )
}

describe('one scope per request', () => {
  test('behavior: a read, a write and a keyed write each enter one scope, and every store call of theirs runs in it', async () => {
    const { handler, scoped } = watchedMarket()
    expect((await send(handler, 'POST', '/api/agents/register', { name: 'scoped' })).status).toBe(200)
    const requests: [string, string, unknown?, Record<string, string>?][] = [
      ['GET', '/api/agents/scoped/agent-card.json'],
      ['GET', '/api/community/agents/scoped'],
      ['POST', '/api/agents/register', { name: 'plain-write' }],
      ['POST', '/api/agents/register', { name: 'keyed-write' }, { 'idempotency-key': 'scope-count-1' }],
    ]
    for (const [method, path, body, headers] of requests) {
      scoped.length = 0
      const entered = countScopes()
      const answer = await send(handler, method, path, body, headers)
      AsyncLocalStorage.prototype.run = run
      expect(answer.status, `${method} ${path}`).toBe(200)
      expect(entered.count, `${method} ${path}`).toBe(1)
      expect(scoped.length, `${method} ${path}`).toBeGreaterThan(0)
      expect(scoped.every(Boolean), `${method} ${path}`).toBe(true)
    }
  })
})
