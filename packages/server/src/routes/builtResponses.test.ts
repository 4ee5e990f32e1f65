import { describe, expect, test } from 'bun:test'
import { defaultConfig, Marketplace, type MarketplaceActions, type TaskStatus } from '@agentmarket/core'
import { sampleTask } from '@agentmarket/core/testing'
import { libsqlStore, openDatabase } from '@agentmarket/store-libsql'
import { Elysia } from 'elysia'
import { createApp } from '../app.ts'
import { TEST_BASE_URL, testApp } from '../testing/http.ts'
import { APP_HEADERS, type Reply, sendJson } from './etag.ts'

/** The app over a marketplace whose paid order answers `answer` whatever it is asked. */
async function appAnswering(answer: () => Response) {
  const store = libsqlStore(await openDatabase(':memory:'))
  const market = Marketplace.create({ store, config: defaultConfig(TEST_BASE_URL) })
  const answering = Object.create(market, { orderWithPayment: { value: async () => answer() } })
  return createApp({ market: answering as MarketplaceActions, baseUrl: TEST_BASE_URL })
}

const order = () =>
  new Request(`${TEST_BASE_URL}/api/agents/seller/tasks/summary`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  })

describe('a Response a route answers', () => {
  test('work: is the Response sent, not a copy, with the app headers added and its own kept', async () => {
    const built = new Response('{"status":402}', {
      status: 402,
      headers: { 'www-authenticate': 'Payment id="x"', 'referrer-policy': 'same-origin' },
    })
    const app = await appAnswering(() => built)
    const sent = await app.handle(order())
    expect(sent).toBe(built)
    expect(sent.status).toBe(402)
    expect(sent.headers.get('www-authenticate')).toBe('Payment id="x"')
    expect(sent.headers.get('referrer-policy')).toBe('same-origin')
    expect(sent.headers.get('x-content-type-options')).toBe('nosniff')
    expect(sent.headers.get('access-control-allow-origin')).toBe('*')
    expect(await sent.text()).toBe('{"status":402}')
  })

  test('behavior: a problem carries the app headers and its own, with its status', async () => {
    const { call } = await testApp()
    const missing = await call('POST', '/api/agents/nobody/tasks/summary', { body: {} })
    expect(missing.status).toBe(404)
    expect(missing.headers.get('content-type')).toBe('application/problem+json')
    expect(missing.headers.get('x-content-type-options')).toBe('nosniff')
    expect(missing.headers.get('access-control-expose-headers')).toContain('retry-after')
  })
})

describe('sendJson', () => {
  test('behavior: an object or array, answered 200 or 201, goes on the wire byte for byte as Elysia writes it', async () => {
    const bodies: Record<string, object> = {
      object: { a: 1, text: 'é “quoted” \u2028', nested: { list: [1, null, true], empty: {} }, none: null },
      array: [{ id: 'x' }, 2, 'three'],
    }
    const answer =
      (mine: boolean) =>
      ({ params, set }: { params: Record<string, string>; set: Reply }) => {
        set.status = Number(params.status)
        const body = bodies[params.kind ?? ''] ?? {}
        return mine ? sendJson(body, set) : body
      }
    const path = '/json/:kind/:status'
    const ours = new Elysia().headers({ ...APP_HEADERS }).get(path, answer(true) as never)
    const reference = new Elysia().headers({ ...APP_HEADERS }).get(path, answer(false) as never)
    ours.listen({ port: 0, hostname: '127.0.0.1' })
    reference.listen({ port: 0, hostname: '127.0.0.1' })
    try {
      for (const kind of Object.keys(bodies))
        for (const status of [200, 201]) {
          const sent = await wireBytes(Number(ours.server?.port), `/json/${kind}/${status}`)
          expect(sent).toStartWith(`HTTP/1.1 ${status} `)
          expect(sent).toContain('Content-Type: application/json;charset=utf-8\r\n')
          expect(sent).toBe(await wireBytes(Number(reference.server?.port), `/json/${kind}/${status}`))
        }
    } finally {
      await ours.stop()
      await reference.stop()
    }
  })
})

/** The bytes `port` answers a GET of `path` with, one character a byte, its Date line left out (the clock's). */
async function wireBytes(port: number, path: string): Promise<string> {
  const chunks: Buffer[] = []
  await new Promise<void>((resolve, reject) => {
    Bun.connect({
      hostname: '127.0.0.1',
      port,
      socket: {
        open: (socket) => {
          socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`)
        },
        data: (_socket, data) => {
          chunks.push(Buffer.from(data))
        },
        close: () => resolve(),
        error: (_socket, error) => reject(error),
      },
    }).catch(reject)
  })
  return Buffer.concat(chunks)
    .toString('latin1')
    .replace(/^Date: .*\r\n/m, '')
}

describe('a JSON answer', () => {
  test('behavior: a task of every status goes on the wire byte for byte as Elysia writes the same object', async () => {
    const app = await testApp()
    const statuses: TaskStatus[] = [
      'pending_payment',
      'paid',
      'delivered',
      'completed',
      'rejected',
      'expired',
    ]
    const at = new Date('2026-06-01T11:00:00.000Z')
    const payment = (n: number) => ({
      method: 'transfer' as const,
      txHash: `0x${n.toString(16).padStart(64, 'a')}` as const,
      escrowTaskId: null,
      amountBaseUnits: 10_000n,
      from: '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359' as const,
      at,
    })
    // Each status bare, and with a payment, a result (non-ASCII text included) and a delivery time.
    const tasks = statuses.flatMap((status, n) => [
      sampleTask({ status }),
      sampleTask({ status, payment: payment(n + 1), resultUrl: 'https://example.com/r/é', deliveredAt: at }),
    ])
    for (const task of tasks) expect((await app.store.insertTask(task, [])).outcome).toBe('inserted')
    const ours = app.app.listen({ port: 0, hostname: '127.0.0.1' })
    // Elysia's own answer of the same objects, with the app's headers as its defaults.
    const views = new Map<string, unknown>()
    const reference = new Elysia()
      .headers({ ...APP_HEADERS })
      .get('/api/agents/:name/tasks/:id', ({ params }) => views.get(params.id))
      .listen({ port: 0, hostname: '127.0.0.1' })
    try {
      for (const task of tasks) {
        const path = `/api/agents/${task.agentName}/tasks/${task.id}`
        const sent = await wireBytes(Number(ours.server?.port), path)
        expect(sent).toStartWith('HTTP/1.1 200 OK\r\n')
        const body = Buffer.from(sent.slice(sent.indexOf('\r\n\r\n') + 4), 'latin1').toString('utf8')
        views.set(task.id, JSON.parse(body))
        expect(sent).toBe(await wireBytes(Number(reference.server?.port), path))
      }
    } finally {
      await ours.stop()
      await reference.stop()
    }
  })
})
