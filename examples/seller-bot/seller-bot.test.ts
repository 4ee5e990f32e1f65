import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient, type Task } from '@agentmarket/client'
import type { HDAccount } from 'viem/accounts'
import { type Anvil, paymentChain } from '../../tests/support/anvil.ts'
import { type MarketServer, startMarketServer } from '../../tests/support/process.ts'
import { runSellerBot, type SellerBotOptions, type SellerTask } from './bot.ts'

// The bot against `bun start` on a fresh database, paid on anvil (chain 8453, the mock USDC at Base's address, one
// confirmation); buyers use @agentmarket/client as any buyer would. Every wait is on a condition.
setDefaultTimeout(120_000)
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-seller-bot-'))
const stop = new AbortController()
const logs: string[] = []
// What the work function saw of each task, one entry per attempt.
const attempts: Record<string, string[]> = {}
// 0.25 USDC, the price of the bot's paid skill, in base units.
const PRICE = 250_000n
let anvil: Anvil
let buyer: HDAccount
let seller: HDAccount
let server: MarketServer
let running: Promise<void>[] = []

/** Echoes every task to a result URL; a `flaky` task fails its first attempt. */
async function work(task: SellerTask): Promise<string> {
  const seen = attempts[task.task_id] ?? []
  attempts[task.task_id] = seen
  seen.push(task.status)
  if (task.skill_slug === 'flaky' && seen.length === 1) throw new Error('the first try fails')
  return `https://results.test/${task.task_id}`
}

/** Starts a bot against the server with short intervals, its log lines prefixed by `label`; resolves once it has a key. */
async function startBot(label: string, options: Partial<SellerBotOptions> & { name: string }) {
  let resolve = () => {}
  const ready = new Promise<void>((done) => {
    resolve = done
  })
  const run = runSellerBot({
    baseUrl: server.base,
    skills: ['Echo', 'Flaky', { name: 'Report', type: 'purchasable', price: 0.25, sla: '1 minute' }],
    walletAddress: seller.address,
    heartbeatMs: 100,
    pollMs: 50,
    work,
    signal: stop.signal,
    log: (line) => logs.push(`${label} ${line}`),
    onRegistered: () => resolve(),
    ...options,
  })
  running.push(run)
  if (options.apiKey) resolve()
  await ready
  // Wrapped: an async function returning the promise itself would wait for the bot to stop.
  return { run }
}

/** Polls `read` until `done` holds for its value. */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (;;) {
    const value = await read()
    if (done(value)) return value
    await Bun.sleep(25)
  }
}

/** A buyer's client of the market (no key: the task id is its credential). */
const buyerClient = () => createClient({ baseUrl: server.base })

/** Orders a free skill of the bot as a buyer and waits until the bot completed it. */
async function orderAndWait(skill: string) {
  const market = buyerClient()
  const created = (await market.order('echo-seller', { skill, params: { q: 'hello' }, buyer: 'ann' })) as Task
  expect(created.status).toBe('paid')
  return market.waitForTask('echo-seller', created.task_id, { intervalMs: 25, maxIntervalMs: 200 })
}

beforeAll(async () => {
  const chain = await paymentChain(['buyer', 'seller'], { funded: ['buyer'] })
  ;({ anvil } = chain)
  ;({ buyer, seller } = chain.accounts)
  server = await startMarketServer({
    DATABASE_URL: `file:${join(folder, 'market.db')}`,
    CHAIN_RPC_URL: anvil.rpcUrl,
    MIN_CONFIRMATIONS: '1',
    TEMPO_RPC_URL: 'http://127.0.0.1:9',
    // The bot's webhook receiver listens on loopback.
    WEBHOOK_ALLOW_PRIVATE: 'on',
  })
  await startBot('seller', { name: 'echo-seller' })
})

afterAll(async () => {
  stop.abort()
  await Promise.all(running)
  running = []
  server?.stop()
  anvil?.stop()
  rmSync(folder, { recursive: true, force: true })
})

describe('seller bot', () => {
  test('behavior: a buyer orders the paid skill and pays it on anvil; the bot delivers; the rating shows on the agent', async () => {
    const market = buyerClient()
    const ordered = (await market.order('echo-seller', { skill: 'report', params: { q: 'rust' } })) as Task
    expect(ordered.status).toBe('pending_payment')
    expect(ordered.payment.to).toBe(seller.address)
    const sellerBefore = await anvil.usdcOf(seller.address)
    const paid = await market.payTask(ordered, anvil.walletFor(buyer))
    expect(paid).toMatchObject({ task_id: ordered.task_id, status: 'paid' })
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)

    const done = await market.waitForTask('echo-seller', ordered.task_id, {
      intervalMs: 25,
      maxIntervalMs: 200,
    })
    expect(done).toMatchObject({ status: 'completed', result_url: `https://results.test/${ordered.task_id}` })
    expect(attempts[ordered.task_id]).toEqual(['paid'])

    const rated = await market.rate(done, 5, buyer, 'on time')
    expect(rated.rating).toMatchObject({ score: 5, comment: 'on time', wallet: buyer.address })
    expect((await market.getAgent('echo-seller')).ratings).toEqual({ average: 5, count: 1, buyers: 1 })
    const { ratings } = await market.listRatings('echo-seller')
    expect(ratings.map(({ score, comment }) => ({ score, comment }))).toEqual([
      { score: 5, comment: 'on time' },
    ])
  })

  test('behavior: with a webhook, a paid order is read from the queue on its task.paid delivery, not at the next poll', async () => {
    // The bot's calls go through a recording proxy, so the test knows when its first queue read has answered.
    const queueReads: string[] = []
    const proxy = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(request) {
        const url = new URL(request.url)
        const body = request.method === 'GET' ? undefined : await request.arrayBuffer()
        const answer = await fetch(`${server.base}${url.pathname}${url.search}`, {
          method: request.method,
          headers: request.headers,
          body,
        })
        const text = await answer.arrayBuffer()
        if (request.method === 'GET' && url.pathname.endsWith('/tasks')) queueReads.push(url.search)
        return new Response(text, { status: answer.status, headers: answer.headers })
      },
    })
    const deliveries: string[] = []
    const receiver = { url: '', answers: [] as number[] }
    const halt = new AbortController()
    let apiKey = ''
    const run = runSellerBot({
      baseUrl: proxy.url.origin,
      name: 'hook-seller',
      skills: [{ name: 'Report', type: 'purchasable', price: 0.25 }],
      walletAddress: seller.address,
      heartbeatMs: 60_000,
      // An hour: after its first read, only the webhook brings the bot back to its queue within the test.
      pollMs: 3_600_000,
      work,
      signal: halt.signal,
      log: (line) => logs.push(`hook ${line}`),
      onRegistered: (key) => {
        apiKey = key
      },
      webhook: {
        serve: (handler) => {
          const listener = Bun.serve({
            port: 0,
            hostname: '127.0.0.1',
            async fetch(request) {
              deliveries.push(request.headers.get('webhook-id') ?? 'unsigned')
              const answer = await handler(request)
              receiver.answers.push(answer.status)
              return answer
            },
          })
          receiver.url = `${listener.url.origin}/hook`
          return { url: receiver.url, stop: () => listener.stop(true) }
        },
      },
    })
    try {
      await until(
        async () => queueReads.length,
        (reads) => reads >= 1,
      )
      const own = createClient({ baseUrl: server.base, apiKey })
      const endpoints = await own.listWebhooks('hook-seller')
      expect(endpoints.webhooks.map(({ url, events }) => ({ url, events }))).toEqual([
        { url: receiver.url, events: ['task.paid'] },
      ])

      const market = buyerClient()
      const ordered = (await market.order('hook-seller', { skill: 'report' })) as Task
      await market.payTask(ordered, anvil.walletFor(buyer))
      const done = await market.waitForTask('hook-seller', ordered.task_id, {
        intervalMs: 25,
        maxIntervalMs: 200,
      })
      expect(done).toMatchObject({
        status: 'completed',
        result_url: `https://results.test/${ordered.task_id}`,
      })
      expect(queueReads).toHaveLength(2)
      expect(deliveries).toHaveLength(1)
      expect(receiver.answers).toEqual([204])

      // A delivery that does not verify is refused and changes nothing.
      const forged = await fetch(receiver.url, {
        method: 'POST',
        headers: { 'webhook-id': 'msg_forged', 'webhook-timestamp': '1', 'webhook-signature': 'v1,AAAA' },
        body: JSON.stringify({ type: 'task.paid', data: {} }),
      })
      expect(forged.status).toBe(401)
      expect(queueReads).toHaveLength(2)
    } finally {
      halt.abort()
      await run
      proxy.stop(true)
    }
    // Stopped, the bot deleted its endpoint.
    const own = createClient({ baseUrl: server.base, apiKey })
    expect((await own.listWebhooks('hook-seller')).webhooks).toEqual([])
    expect(logs.filter((line) => line.startsWith('hook'))).toEqual([
      expect.stringContaining('hook webhook: a delivery did not verify'),
    ])
  })

  test('behavior: the bot completes an order of its free skill with the URL its work answered', async () => {
    const task = await orderAndWait('echo')
    expect(task.status).toBe('completed')
    expect(task.result_url).toBe(`https://results.test/${task.task_id}`)
    expect(task.params).toEqual({ q: 'hello' })
    expect(attempts[task.task_id]).toEqual(['paid'])
  })

  test('behavior: its heartbeats keep the agent live', async () => {
    const market = buyerClient()
    const first = await market.getAgent('echo-seller')
    expect(first.heartbeat.status).toBe('live')
    const later = await until(
      () => market.getAgent('echo-seller'),
      (agent) => (agent.heartbeat.lastSeen ?? '') > (first.heartbeat.lastSeen ?? ''),
    )
    expect(later.heartbeat.status).toBe('live')
  })

  test('error: a task whose work throws stays paid and is done again on a later poll', async () => {
    const task = await orderAndWait('flaky')
    expect(task.status).toBe('completed')
    expect(attempts[task.task_id]).toEqual(['paid', 'paid'])
    expect(logs).toContainEqual(
      `seller work on ${task.task_id}: the first try fails; it stays paid and is tried again`,
    )
  })

  test('error: a bot with a wrong key reports 401 unauthorized and keeps running', async () => {
    let settled = false
    const { run } = await startBot('impostor', { name: 'echo-seller', apiKey: 'amk_not-the-key' })
    const settle = () => {
      settled = true
    }
    run.then(settle, settle)
    await until(
      async () => logs.filter((line) => line.startsWith('impostor')),
      (lines) =>
        lines.some((line) => line.includes('heartbeat')) && lines.some((line) => line.includes('poll')),
    )
    await Bun.sleep(200)
    expect(settled).toBe(false)
    expect(logs).toContain('impostor heartbeat: 401 unauthorized: The bearer API key is not valid.')
    expect(logs).toContain('impostor poll: 401 unauthorized: The bearer API key is not valid.')
  })

  test('error: a 503 with Retry-After holds the next heartbeat and the next queue read back that long', async () => {
    const beats: number[] = []
    const polls: number[] = []
    const busy = () => {
      const problem = { code: 'database_busy', detail: 'Try again in a second.', status: 503 }
      return Response.json(problem, { status: 503, headers: { 'retry-after': '1' } })
    }
    // A stand-in market: the real one never answers these with 503. The first heartbeat is refused once (the
    // client sends it again after the Retry-After); the queue is refused three times, past the client's two retries,
    // so the bot itself waits the Retry-After before its next read.
    const stub = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch(request) {
        if (request.url.endsWith('/heartbeat')) {
          beats.push(Date.now())
          if (beats.length === 1) return busy()
          return Response.json({ status: 'live', lastSeen: new Date().toISOString(), agent: 'x' })
        }
        polls.push(Date.now())
        if (polls.length <= 3) return busy()
        return Response.json({ tasks: [], total: 0, limit: 100, offset: 0 })
      },
    })
    const halt = new AbortController()
    const run = runSellerBot({
      baseUrl: stub.url.origin,
      name: 'x',
      skills: [],
      apiKey: 'amk_stub',
      heartbeatMs: 60_000,
      pollMs: 20,
      work,
      signal: halt.signal,
      log: (line) => logs.push(`stub ${line}`),
    })
    await until(
      async () => [beats.length, polls.length],
      ([beaten = 0, polled = 0]) => beaten >= 2 && polled >= 4,
    )
    halt.abort()
    await run
    stub.stop(true)
    const gap = (times: number[], index: number) => (times[index] ?? 0) - (times[index - 1] ?? 0)
    expect(gap(beats, 1)).toBeGreaterThanOrEqual(950)
    for (const index of [1, 2, 3]) expect(gap(polls, index)).toBeGreaterThanOrEqual(950)
    expect(logs.filter((line) => line.startsWith('stub'))).toEqual([
      'stub poll: 503 database_busy: Try again in a second.',
    ])
  })
})
