import { afterEach, describe, expect, test } from 'bun:test'
import { currentRequest, type Store } from '@agentmarket/core'
import { libsqlStore, openDatabase } from '@agentmarket/store-libsql'
import { testApp } from '../packages/server/src/testing/http.ts'
import { startWebhookDelivery } from '../packages/server/src/webhooks/delivery.ts'
import { sellerWithEndpoint } from './support/sellerWithEndpoint.ts'
import { until } from './support/until.ts'

// Issue 39: a request's scope (its chain budget, and the PostgreSQL store's count of what it waited and its place in
// line) must end with the request. Background work a request sets going (a pass it wakes through its feed events,
// the live feed's poll started by the first subscriber) inherited it: a woken webhook pass ran its store calls as a
// request long answered, ahead of live requests in the line and with windows of a request that had spent its wait
// (seen in a trace of the PostgreSQL restart). Every store method is watched, so a new pass or a new method is
// covered without being listed here.

type Watched = { name: string; scoped: boolean; after: boolean; byFeedHub: boolean }

let stops: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const stop of stops) await stop()
  stops = []
})

/**
 * `store` with every method call recorded: its name, whether it ran in a request's scope, in which phase, and whether
 * the live feed's hub made it (its frames are on the call's stack: the hub calls the store before its first await).
 */
function watchedStore(store: Store) {
  const calls: Watched[] = []
  const phase = { after: false }
  const watched = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver)
      if (typeof value !== 'function' || typeof key !== 'string') return value
      return (...args: unknown[]) => {
        const byFeedHub = new Error().stack?.includes('FeedHub.ts') ?? false
        calls.push({ name: key, scoped: currentRequest() !== null, after: phase.after, byFeedHub })
        return value.apply(target, args)
      }
    },
  })
  return { watched, calls, phase }
}

describe('background work set going by a request runs outside its scope', () => {
  test('attack: after every request was answered, no store call of a woken pass or of the live feed runs as one of them', async () => {
    const { watched, calls, phase } = watchedStore(libsqlStore(await openDatabase(':memory:')))
    let wake = () => {}
    const app = await testApp(new Date().toISOString(), {
      store: watched,
      webhookAllowPrivate: true,
      onEventsWritten: () => wake(),
    })
    const transport = { post: async () => ({ status: 204 }) }
    // A pass that backs off a long way at rest, so that a request's wake sets its next timer. (Payment re-checks run
    // on a plain interval set at start, which no request wakes.)
    const delivery = startWebhookDelivery(app.market, transport, { intervalMs: 20, idleMaxMs: 60_000 })
    stops.push(() => delivery.stop())
    // At rest first: five empty passes, so the next is at least 320 ms away.
    const passes = (name: string) => calls.filter((call) => call.name === name).length
    await until(() => passes('claimDueDeliveries') >= 5, 'five empty delivery passes')
    wake = () => delivery.wake()
    // The live feed's first subscriber is a request: the feed's poll it starts serves every subscriber after it.
    const live = new AbortController()
    const stream = await app.app.handle(
      new Request('http://localhost/api/feed/live', {
        headers: { accept: 'text/event-stream' },
        signal: live.signal,
      }),
    )
    expect(stream.status).toBe(200)
    expect(stream.headers.get('content-type')).toBe('text/event-stream')
    stops.push(() => live.abort())
    const order = await sellerWithEndpoint(app)
    for (let n = 0; n < 3; n++) await order()
    expect(calls.some((call) => call.scoped)).toBe(true)
    phase.after = true
    // Every request is answered; the passes woken by their writes and the feed's poll go on.
    const later = () => calls.filter((call) => call.after)
    // The feed's own poll included: the passes alone reach twenty calls before its first tick.
    await until(
      () =>
        new Set(later().map((call) => call.name)).size >= 3 &&
        later().length >= 20 &&
        later().filter((call) => call.byFeedHub).length >= 2,
      'twenty calls of three kinds after the last answer, two of them by the feed',
    )
    const scoped = later().filter((call) => call.scoped)
    expect(scoped.map((call) => call.name)).toEqual([])
  })
})
