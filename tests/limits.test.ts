import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { type MarketServer, readUntil, runToEnd, startMarketServer } from './support/process.ts'

/** The server's idle timeout in these tests: short, so a stalled request is cut within seconds. */
const IDLE_SECONDS = 3
/** Bun looks at connection timeouts every 4 s: one is cut up to a tick after its time is up. */
const TICK_MS = 4_000
/** Bun's own deadline for a request's headers to arrive (not configurable, whatever the idle timeout). */
const HEADERS_DEADLINE_MS = 10_000
/** Slack for a loaded machine. */
const SLACK_MS = 1_500

let server: MarketServer
let port: number

beforeAll(async () => {
  server = await startMarketServer({ DATABASE_URL: ':memory:', IDLE_TIMEOUT_SECONDS: String(IDLE_SECONDS) })
  port = Number(new URL(server.base).port)
})
afterAll(() => server.stop())

/** What a raw connection received before the server closed it, and when it closed. */
type Exchange = { text: string; closedAfterMs: number }

/**
 * Opens a raw TCP connection, sends `head`, then `drip` one byte a second; resolves when the server closes the
 * connection (or after `giveUpMs`, with closedAfterMs Infinity).
 */
function rawExchange(head: string, drip = '', giveUpMs = 20_000): Promise<Exchange> {
  return new Promise((resolve) => {
    const started = performance.now()
    const socket = connect(port, '127.0.0.1')
    let text = ''
    let sent = 0
    const dripper = setInterval(() => {
      if (sent < drip.length) socket.write(drip[sent++] ?? '')
    }, 1_000)
    const giveUp = setTimeout(() => socket.destroy(), giveUpMs)
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1')
    })
    socket.on('error', () => {})
    socket.on('close', () => {
      clearInterval(dripper)
      clearTimeout(giveUp)
      const elapsed = performance.now() - started
      resolve({ text, closedAfterMs: elapsed >= giveUpMs ? Number.POSITIVE_INFINITY : elapsed })
    })
    if (head) socket.write(head)
  })
}

/** A GET of `path` with `headers` as raw header lines. */
const rawGet = (path: string, headers: string[] = []) =>
  `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers.map((line) => `${line}\r\n`).join('')}\r\n`

/** `count` small header fields. */
function fieldsHeaders(count: number): Record<string, string> {
  return Object.fromEntries(Array.from({ length: count }, (_, i) => [`x-field-${i}`, 'v']))
}

/** A registration that sends its headers and the start of a 1000-byte body, then `drip` a byte a second. */
const stalledRegistration = 'POST /api/agents/register HTTP/1.1\r\nHost: 127.0.0.1\r\n'.concat(
  'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"na',
)

/** Times one request on a fresh connection; it must be answered 200. */
async function timedOk(path: string, init: RequestInit = {}) {
  const started = performance.now()
  const response = await fetch(`${server.base}${path}`, { ...init, keepalive: false })
  await response.arrayBuffer()
  return { status: response.status, ms: performance.now() - started }
}

describe('request header limits (Bun.serve)', () => {
  test('error: over 16 KiB of headers, or about 190 header fields, is 431 and the connection closed; the server goes on', async () => {
    const oversize = [
      rawGet('/api/community/health', [`X-Big: ${'a'.repeat(64 * 1024)}`]),
      rawGet('/api/community/health', [`X-Big: ${'a'.repeat(16 * 1024)}`]),
      rawGet(
        '/api/community/health',
        Array.from({ length: 200 }, (_, i) => `X-Field-${i}: v`),
      ),
      rawGet(`/api/community/health?pad=${'a'.repeat(20_000)}`),
    ]
    for (const request of oversize) {
      const answer = await rawExchange(request)
      expect(answer.text).toStartWith('HTTP/1.1 431 ')
      expect(answer.text.toLowerCase()).toContain('connection: close')
      expect(answer.closedAfterMs).toBeLessThan(SLACK_MS)
    }
    const underLimit = await fetch(`${server.base}/api/community/health`, {
      headers: { 'x-big': 'a'.repeat(12 * 1024), ...fieldsHeaders(100) },
    })
    expect(underLimit.status).toBe(200)
    expect((await timedOk('/api/community/health')).status).toBe(200)
  })
})

describe('slow clients', () => {
  test.concurrent('error: stalled or trickling requests are closed within the bound, unanswered, while other clients are served', async () => {
    const headerStalls = [
      rawExchange(''),
      rawExchange('GET /api/community/health HTTP/1.1\r\nHost: 127.0.0.1\r\n'),
      rawExchange('GET /api/community/health HTTP/1.1\r\n', `X-Slow: ${'a'.repeat(40)}\r\n\r\n`),
      ...Array.from({ length: 100 }, () => rawExchange('GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\n')),
    ]
    const bodyStalls = [
      rawExchange(stalledRegistration),
      rawExchange(stalledRegistration, `me":"slowpoke",${' '.repeat(40)}`),
    ]
    await Bun.sleep(1_000)
    const meanwhile = [
      await timedOk('/api/community/health'),
      await timedOk('/api/agents/register', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'prompt' }),
      }),
    ]
    for (const answer of meanwhile) {
      expect(answer.status).toBe(200)
      expect(answer.ms).toBeLessThan(SLACK_MS)
    }
    for (const stall of await Promise.all(bodyStalls)) {
      expect(stall.text).toBe('')
      expect(stall.closedAfterMs).toBeLessThan(IDLE_SECONDS * 1000 + TICK_MS + SLACK_MS)
    }
    for (const stall of await Promise.all(headerStalls)) {
      expect(stall.text).toBe('')
      expect(stall.closedAfterMs).toBeLessThan(HEADERS_DEADLINE_MS + TICK_MS + SLACK_MS)
    }
    expect((await fetch(`${server.base}/api/community/agents/slowpoke`)).status).toBe(404)
  }, 30_000)

  test.concurrent('behavior: the live feed stream outlives the idle timeout and still delivers events', async () => {
    const stream = await fetch(`${server.base}/api/feed/live`, { headers: { accept: 'text/event-stream' } })
    expect(stream.status).toBe(200)
    const events = stream.body
    if (!events) throw new Error('no stream body')
    expect(await readUntil(events, (text) => text.includes(': connected'))).toContain(': connected')
    // Silent for well past the idle timeout and Bun's tick: a connection under the server's timeout is cut by now.
    await Bun.sleep(IDLE_SECONDS * 1000 + TICK_MS + SLACK_MS)
    const registered = await fetch(`${server.base}/api/agents/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'patient' }),
    })
    expect(registered.status).toBe(200)
    const text = await readUntil(events, (seen) => seen.includes('"patient"'))
    expect(text).toContain('agent.registered')
    await events.cancel()
  }, 30_000)
})

describe('IDLE_TIMEOUT_SECONDS', () => {
  test('error: 0, over 255 or not a number stops start-up with exit 1 and one clear line', async () => {
    const root = new URL('..', import.meta.url).pathname
    for (const value of ['0', '256', 'ten']) {
      const run = await runToEnd(['bun', 'packages/server/src/main.ts'], {
        cwd: root,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          DATABASE_URL: ':memory:',
          IDLE_TIMEOUT_SECONDS: value,
        },
      })
      expect(run.exitCode, value).toBe(1)
      expect(run.stderr.trim().split('\n'), value).toEqual([
        `agentmarket: IDLE_TIMEOUT_SECONDS="${value}" is invalid: must be a whole number of seconds from 1 to 255`,
      ])
    }
  })
})
