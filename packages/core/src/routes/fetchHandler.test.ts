import { describe, expect, test } from 'bun:test'
import { memoryStore } from '../adapters/memoryStore.ts'
import { defaultConfig } from '../Config.ts'
import { Marketplace } from '../Marketplace.ts'
import { memoryRateBuckets, rateLimiter } from '../RateLimit.ts'
import { createFetchHandler } from './fetchHandler.ts'
import { MARKET_ROUTES } from './marketRoutes.ts'

const base = 'http://market.test'
const newMarket = () => Marketplace.create({ store: memoryStore(), config: defaultConfig(base) })

/** One request to `handler`, with a JSON body when given. */
function send(handler: ReturnType<typeof createFetchHandler>, method: string, path: string, body?: unknown) {
  return handler.fetch(
    new Request(`${base}${path}`, {
      method,
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    }),
  )
}

describe('createFetchHandler', () => {
  test('behavior: every row of the route table is served (no row answers the unknown-route 404)', async () => {
    const handler = createFetchHandler(newMarket())
    for (const row of MARKET_ROUTES) {
      const path = `/api${row.path.replace(/\{\w+\}/g, 'nobody')}`
      const answer = await send(handler, row.method, path)
      const body = answer.headers.get('content-type')?.includes('json') ? await answer.json() : {}
      expect(body.code, `${row.method} ${path}`).not.toBe('not_found')
      expect(answer.status, `${row.method} ${path}`).not.toBe(500)
    }
  })

  test('behavior: /api/v1 and a trailing slash reach the same operation; a static segment wins over a parameter', async () => {
    const handler = createFetchHandler(newMarket())
    expect((await send(handler, 'POST', '/api/v1/agents/register/', { name: 'aliased' })).status).toBe(200)
    const agent = await send(handler, 'GET', '/api/community/agents/ALIASED')
    expect((await agent.json()).name).toBe('aliased')
  })

  test('error: an unknown path and a malformed percent-encoding are 404 problems', async () => {
    const handler = createFetchHandler(newMarket())
    for (const [method, path] of [
      ['GET', '/api/nothing'],
      ['DELETE', '/api/community/nothing'],
      ['GET', '/apix/community/agents'],
      ['GET', '/api/community/agents/%E0%A4%A'],
    ] as const) {
      const answer = await send(handler, method, path)
      expect(answer.status, path).toBe(404)
      expect(answer.headers.get('content-type')).toBe('application/problem+json')
    }
  })

  test("attack: with a limiter, registrations past the row's class (register) are 429 with Retry-After; reads are not", async () => {
    const limiter = rateLimiter(memoryRateBuckets(), {
      policies: { register: { name: 'register', limit: 1, windowSeconds: 3600 } },
    })
    const handler = createFetchHandler(newMarket(), { limiter, clientOf: () => '198.51.100.7' })
    expect((await send(handler, 'POST', '/api/agents/register', { name: 'first-one' })).status).toBe(200)
    const refused = await send(handler, 'POST', '/api/agents/register', { name: 'second-one' })
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/)
    expect((await send(handler, 'GET', '/api/community/agents/second-one')).status).toBe(404)
    expect((await send(handler, 'GET', '/api/community/agents')).status).toBe(200)
  })

  test('behavior: the card carries a content ETag (304 to If-None-Match); the feed streams with Accept: text/event-stream', async () => {
    const handler = createFetchHandler(newMarket())
    await send(handler, 'POST', '/api/agents/register', { name: 'carded' })
    const card = await send(handler, 'GET', '/api/agents/carded/agent-card.json')
    const etag = card.headers.get('etag') ?? ''
    expect(etag).toMatch(/^W\/"[\w-]{27}"$/)
    const again = await handler.fetch(
      new Request(`${base}/api/agents/carded/agent-card.json`, { headers: { 'if-none-match': etag } }),
    )
    expect(again.status).toBe(304)
    const left = new AbortController()
    const stream = await handler.fetch(
      new Request(`${base}/api/feed/live`, { headers: { accept: 'text/event-stream' }, signal: left.signal }),
    )
    expect(stream.headers.get('content-type')).toBe('text/event-stream')
    const reader = stream.body?.getReader()
    expect(new TextDecoder().decode((await reader?.read())?.value)).toContain('retry: 2000')
    left.abort()
  })

  test('attack: feed streams are capped per client and in all (429 too_many_streams); a closed one frees its slot', async () => {
    const handler = createFetchHandler(newMarket(), {
      clientOf: (request) => request.headers.get('x-client'),
      streams: { perClient: 2, total: 3 },
    })
    const open = (client: string) => {
      const left = new AbortController()
      const answer = handler.fetch(
        new Request(`${base}/api/feed/live`, {
          headers: { accept: 'text/event-stream', 'x-client': client },
          signal: left.signal,
        }),
      )
      return { answer, left }
    }
    const first = open('198.51.100.1')
    const second = open('198.51.100.1')
    expect((await first.answer).status).toBe(200)
    expect((await second.answer).status).toBe(200)
    const third = await open('198.51.100.1').answer
    expect(third.status).toBe(429)
    expect((await third.json()).code).toBe('too_many_streams')
    const other = open('203.0.113.5')
    expect((await other.answer).status).toBe(200)
    expect((await open('203.0.113.6').answer).status).toBe(429)
    first.left.abort()
    await Bun.sleep(5)
    expect((await open('198.51.100.1').answer).status).toBe(200)
    for (const stream of [second, other]) stream.left.abort()
  })

  test('attack: a body no operation reads (unknown route, declared over 64 KiB) is cancelled, not left to pile up', async () => {
    const handler = createFetchHandler(newMarket())
    const cancelled: string[] = []
    const body = (label: string) =>
      new ReadableStream<Uint8Array>({
        pull(controller) {
          controller.enqueue(new Uint8Array(1024))
        },
        cancel() {
          cancelled.push(label)
        },
      })
    const send = (path: string, label: string, headers: Record<string, string> = {}) =>
      handler.fetch(
        new Request(`${base}${path}`, {
          method: 'POST',
          body: body(label),
          headers: { 'content-type': 'application/json', ...headers },
          duplex: 'half',
        } as RequestInit),
      )
    expect((await send('/api/nothing', 'unknown route')).status).toBe(404)
    expect(
      (await send('/api/agents/register', 'declared', { 'content-length': String(10 * 1024 * 1024) })).status,
    ).toBe(413)
    expect((await send('/api/agents/register', 'endless')).status).toBe(413)
    expect(cancelled.sort()).toEqual(['declared', 'endless', 'unknown route'])
  })

  test('error: a known path with another method is 405 with Allow; problem type URIs are documented', async () => {
    const handler = createFetchHandler(newMarket())
    const wrong = await send(handler, 'GET', '/api/agents/register')
    // PUT too: an agent may be named "register" (the static route wins only for POST).
    expect([wrong.status, wrong.headers.get('allow')]).toEqual([405, 'POST, PUT'])
    const list = await send(handler, 'DELETE', '/api/community/agents')
    expect([list.status, list.headers.get('allow')]).toEqual([405, 'GET'])
    expect(await wrong.json()).toMatchObject({
      code: 'method_not_allowed',
      type: `${base}/problems/method_not_allowed`,
    })
    const doc = await send(handler, 'GET', '/problems/method_not_allowed')
    expect(await doc.json()).toMatchObject({ code: 'method_not_allowed', status: 405 })
    expect((await send(handler, 'GET', '/problems/nope')).status).toBe(404)
  })
})
