import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type MarketServer, startMarketServer } from '../../tests/support/process.ts'
import { runSellerBot, type SellerBotOptions, type SellerTask } from './bot.ts'

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-seller-bot-'))
const stop = new AbortController()
const logs: string[] = []
// What the work function saw of each task, one entry per attempt.
const attempts: Record<string, string[]> = {}
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
    skills: ['Echo', 'Flaky'],
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

// biome-ignore lint/suspicious/noExplicitAny: tests read many JSON shapes and assert on them
async function api(path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(`${server.base}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: response.status, json: await response.json() }
}

/** Polls `read` until `done` holds for its value, or fails after `timeoutMs`. */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const started = Date.now()
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() - started > timeoutMs) throw new Error(`still ${JSON.stringify(value)}`)
    await Bun.sleep(25)
  }
}

/** Orders a free skill of the bot as a buyer and waits until the bot completed it. */
async function orderAndWait(skill: string) {
  const created = await api('/api/agents/echo-seller/tasks', { skill, params: { q: 'hello' }, buyer: 'ann' })
  expect(created.status).toBe(201)
  expect(created.json.status).toBe('paid')
  const path = `/api/agents/echo-seller/tasks/${created.json.task_id}`
  const { json } = await until(
    () => api(path),
    (task) => task.json.status === 'completed',
  )
  return json
}

beforeAll(async () => {
  server = await startMarketServer({
    DATABASE_URL: `file:${join(folder, 'market.db')}`,
    CHAIN_RPC_URL: 'http://127.0.0.1:9',
    TEMPO_RPC_URL: 'http://127.0.0.1:9',
  })
  await startBot('seller', { name: 'echo-seller' })
})

afterAll(async () => {
  stop.abort()
  await Promise.all(running)
  running = []
  server?.stop()
  rmSync(folder, { recursive: true, force: true })
})

describe('seller bot', () => {
  test('behavior: the bot completes an order of its free skill with the URL its work answered', async () => {
    const task = await orderAndWait('echo')
    expect(task.result_url).toBe(`https://results.test/${task.task_id}`)
    expect(task.params).toEqual({ q: 'hello' })
    expect(attempts[task.task_id]).toEqual(['paid'])
  })

  test('behavior: its heartbeats keep the agent live', async () => {
    const first = (await api('/api/community/agents/echo-seller')).json
    expect(first.heartbeat.status).toBe('live')
    const later = await until(
      () => api('/api/community/agents/echo-seller'),
      ({ json }) => json.heartbeat.lastSeen > first.heartbeat.lastSeen,
    )
    expect(later.json.heartbeat.status).toBe('live')
  })

  test('error: a task whose work throws stays paid and is done again on a later poll', async () => {
    const task = await orderAndWait('flaky')
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

  test('error: a 503 with Retry-After holds the next heartbeat back that long', async () => {
    const beats: number[] = []
    // A stand-in market: the real one never answers a heartbeat with 503.
    const stub = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch(request) {
        if (!request.url.endsWith('/heartbeat'))
          return Response.json({ tasks: [], total: 0, limit: 100, offset: 0 })
        beats.push(Date.now())
        if (beats.length > 1)
          return Response.json({ status: 'live', lastSeen: new Date().toISOString(), agent: 'x' })
        const problem = { code: 'database_busy', detail: 'Try again in a second.', status: 503 }
        return Response.json(problem, { status: 503, headers: { 'retry-after': '1' } })
      },
    })
    const halt = new AbortController()
    const run = runSellerBot({
      baseUrl: stub.url.origin,
      name: 'x',
      skills: [],
      apiKey: 'amk_stub',
      heartbeatMs: 20,
      pollMs: 1_000,
      work,
      signal: halt.signal,
      log: (line) => logs.push(`stub ${line}`),
    })
    await until(
      async () => beats.length,
      (count) => count >= 2,
    )
    halt.abort()
    await run
    stub.stop(true)
    expect((beats[1] ?? 0) - (beats[0] ?? 0)).toBeGreaterThanOrEqual(950)
    expect(logs).toContain('stub heartbeat: 503 database_busy: Try again in a second.')
  })
})
