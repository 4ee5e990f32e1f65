import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Webhook } from 'standardwebhooks'
import { startMigratedPostgres } from './support/postgres.ts'
import { type MarketServer, startMarketServer } from './support/process.ts'
import { sharedPostgres } from './support/sharedDatabase.ts'
import { until } from './support/until.ts'

// Webhooks from real server processes (two on one libSQL file, both running the sender) to a receiver on 127.0.0.1
// (allowed by WEBHOOK_ALLOW_PRIVATE=on): every event arrives once, signed; a receiver that fails and recovers gets it
// on the retry.
const folder = mkdtempSync(join(tmpdir(), 'webhooks-'))
const postgresServer = await startMigratedPostgres()
afterAll(async () => {
  rmSync(folder, { recursive: true, force: true })
  await postgresServer.stop()
})

/** A JSON request to a server; status and body. */
async function send(server: MarketServer, method: string, path: string, body?: unknown, key?: string) {
  const response = await fetch(`${server.base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(key && { authorization: `Bearer ${key}` }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  // biome-ignore lint/suspicious/noExplicitAny: tests read many JSON shapes and assert on them
  const json: any = await response.json()
  return { status: response.status, json }
}

/** A receiver answering `status(n)` to its n-th request, noting when each arrived. */
function receiver(status: (n: number) => number) {
  const got: { at: number; id: string; body: string; headers: Record<string, string> }[] = []
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const headers = Object.fromEntries(request.headers.entries())
      got.push({
        at: performance.now(),
        id: headers['webhook-id'] ?? '',
        body: await request.text(),
        headers,
      })
      return new Response(null, { status: status(got.length) })
    },
  })
  return { got, url: `http://127.0.0.1:${server.port}/in`, stop: () => server.stop(true) }
}

describe('webhooks from server processes', () => {
  /** Two nodes on `databaseUrl` and a receiver: 20 completions, alternating nodes, arrive once each, signed. */
  async function onceEach(databaseUrl: string, label: string) {
    const env = { DATABASE_URL: databaseUrl, WEBHOOK_ALLOW_PRIVATE: 'on' }
    const nodes = [await startMarketServer(env), await startMarketServer(env)]
    const side = receiver(() => 204)
    try {
      const [first, second] = nodes as [MarketServer, MarketServer]
      const seller = await send(first, 'POST', '/api/agents/register', {
        name: 'seller',
        skills: [{ name: 'Ping', type: 'free' }],
      })
      const key = String(seller.json.apiKey)
      const hook = await send(
        first,
        'POST',
        '/api/agents/seller/webhooks',
        { url: side.url, events: ['task.completed'] },
        key,
      )
      expect(hook.status).toBe(201)
      const completed: number[] = []
      for (let index = 0; index < 20; index++) {
        const node = index % 2 === 0 ? first : second
        const task = await send(node, 'POST', '/api/agents/seller/tasks', { skill: 'ping' })
        const done = await send(
          node,
          'POST',
          `/api/agents/seller/tasks/${task.json.task_id}/complete`,
          { result_url: `https://results.example/${index}` },
          key,
        )
        expect(done.status).toBe(200)
        completed.push(performance.now())
      }
      await until(() => side.got.length >= 20, 'the 20 webhooks received')
      await Bun.sleep(600)
      expect(side.got).toHaveLength(20)
      expect(new Set(side.got.map((got) => got.id)).size).toBe(20)
      const verifier = new Webhook(String(hook.json.secret))
      const urls = side.got.map((got) => {
        const payload = verifier.verify(got.body, got.headers) as { data: { task: { result_url: string } } }
        return payload.data.task.result_url
      })
      expect(new Set(urls).size).toBe(20)
      const latencies = side.got
        .map((got) => {
          const index = Number(JSON.parse(got.body).data.task.result_url.split('/').at(-1))
          return got.at - (completed[index] ?? 0)
        })
        .sort((a, b) => a - b)
      console.log(
        `webhook latency, answer to receipt (${label}, 250 ms passes): p50 ${latencies[10]?.toFixed(0)} ms, max ${latencies.at(-1)?.toFixed(0)} ms`,
      )
    } finally {
      for (const node of nodes) node.stop()
      side.stop()
    }
  }

  test('behavior: two processes on one libSQL file share the outbox: 20 completions arrive once each, signed', async () => {
    await onceEach(`file:${join(folder, 'once.db')}`, '2 processes, libSQL')
  }, 300_000)

  test('behavior: two PostgreSQL nodes share the outbox: 20 completions arrive once each, signed', async () => {
    const database = await sharedPostgres(postgresServer)
    await database.close()
    await onceEach(database.url, '2 PostgreSQL nodes')
  }, 300_000)

  test('behavior: a receiver that fails then recovers gets the event on the retry, under the same webhook-id', async () => {
    const server = await startMarketServer({
      DATABASE_URL: `file:${join(folder, 'retry.db')}`,
      WEBHOOK_ALLOW_PRIVATE: 'on',
    })
    // Down for the first attempt (503), up after.
    const side = receiver((n) => (n === 1 ? 503 : 200))
    try {
      const seller = await send(server, 'POST', '/api/agents/register', {
        name: 'seller',
        skills: [{ name: 'Ping', type: 'free' }],
      })
      const key = String(seller.json.apiKey)
      await send(server, 'POST', '/api/agents/seller/webhooks', { url: side.url }, key)
      const task = await send(server, 'POST', '/api/agents/seller/tasks', { skill: 'ping' })
      const started = performance.now()
      await send(
        server,
        'POST',
        `/api/agents/seller/tasks/${task.json.task_id}/complete`,
        { result_url: 'https://r.example/' },
        key,
      )
      await until(() => side.got.length >= 2, 'the webhook and its retry received')
      expect(side.got).toHaveLength(2)
      expect(side.got[0]?.id).toBe(side.got[1]?.id ?? '')
      const [listed] = (await send(server, 'GET', '/api/agents/seller/webhooks', undefined, key)).json
        .webhooks
      expect(listed.deliveries[0]).toMatchObject({ status: 'delivered', attempts: 2, last_status: 200 })
      console.log(
        `webhook retry: first attempt ${((side.got[0]?.at ?? 0) - started).toFixed(0)} ms after the completion (503), delivered on the retry ${((side.got[1]?.at ?? 0) - started).toFixed(0)} ms after it; latency of the delivered attempt ${listed.deliveries[0].last_latency_ms} ms`,
      )
    } finally {
      server.stop()
      side.stop()
    }
  }, 300_000)
})
