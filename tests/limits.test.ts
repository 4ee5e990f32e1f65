import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { type MarketServer, readUntil, runToEnd, startMarketServer } from './support/process.ts'

/** The server's idle timeout in these tests: short, so a stalled request is cut within seconds. */
const IDLE_SECONDS = 3
/** Bun looks at connection timeouts every 4 s: one is cut up to a tick after its time is up. */
const TICK_MS = 4_000
/** Slack for a loaded machine. */
const SLACK_MS = 1_500
/**
 * How long a test waits for the server to close a connection before it gives up and fails: far past the idle timeout
 * and Bun's own 10 s deadline for a request's headers, plus its tick (a verdict waits on the close, never times it).
 */
const GIVE_UP_MS = 60_000

let server: MarketServer
let port: number

beforeAll(async () => {
  server = await startMarketServer({ DATABASE_URL: ':memory:', IDLE_TIMEOUT_SECONDS: String(IDLE_SECONDS) })
  port = Number(new URL(server.base).port)
})
afterAll(() => server.stop())

/**
 * What a raw connection received, whether the server closed it (not the client giving up), and how many bytes of its
 * drip it had sent by then.
 */
type Exchange = { text: string; closedByServer: boolean; dripped: number }

/** A raw connection: `closed` resolves when it closes; `connected` once it is open. */
type RawConnection = { connected: Promise<void>; isOpen(): boolean; closed: Promise<Exchange> }

/**
 * Opens a raw TCP connection, sends `head`, then `drip` one byte a second (a step each); `closed` resolves when the
 * server closes the connection, or after GIVE_UP_MS with closedByServer false.
 */
function rawConnection(head: string, drip = ''): RawConnection {
  const socket = connect(port, '127.0.0.1')
  let open = true
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  const closed = new Promise<Exchange>((resolve) => {
    let text = ''
    let dripped = 0
    let gaveUp = false
    const dripper = setInterval(() => {
      if (dripped < drip.length) socket.write(drip[dripped++] ?? '')
    }, 1_000)
    const giveUp = setTimeout(() => {
      gaveUp = true
      socket.destroy()
    }, GIVE_UP_MS)
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1')
    })
    socket.on('error', () => {})
    socket.on('close', () => {
      open = false
      clearInterval(dripper)
      clearTimeout(giveUp)
      resolve({ text, closedByServer: !gaveUp, dripped })
    })
  })
  if (head) socket.write(head)
  return { connected, isOpen: () => open, closed }
}

/** A raw exchange on a fresh connection (rawConnection), once it is closed. */
const rawExchange = (head: string, drip = '') => rawConnection(head, drip).closed

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

/** The status of one request on a fresh connection, its answer read in full. */
async function freshStatus(path: string, init: RequestInit = {}) {
  const response = await fetch(`${server.base}${path}`, { ...init, keepalive: false })
  await response.arrayBuffer()
  return response.status
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
      expect(answer.closedByServer).toBe(true)
    }
    const underLimit = await fetch(`${server.base}/api/community/health`, {
      headers: { 'x-big': 'a'.repeat(12 * 1024), ...fieldsHeaders(100) },
    })
    expect(underLimit.status).toBe(200)
    expect(await freshStatus('/api/community/health')).toBe(200)
  })
})

describe('slow clients', () => {
  test.concurrent(
    'error: stalled or trickling requests are closed by the server, unanswered, while other clients are served',
    async () => {
      // Waits on conditions, never on the clock: the server closes each stalled connection (the test gives up only far
      // past every bound), a trickle does not keep its connection open (closed before its last byte, counted in steps
      // of one byte), and others are answered while the stalls are held open.
      const slowHeader = `X-Slow: ${'a'.repeat(40)}\r\n\r\n`
      const headerStalls = [
        rawConnection(''),
        rawConnection('GET /api/community/health HTTP/1.1\r\nHost: 127.0.0.1\r\n'),
        rawConnection('GET /api/community/health HTTP/1.1\r\n', slowHeader),
        ...Array.from({ length: 100 }, () => rawConnection('GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\n')),
      ]
      const trickle = `me":"slowpoke",${' '.repeat(40)}`
      const bodyStalls = [rawConnection(stalledRegistration), rawConnection(stalledRegistration, trickle)]
      const stalls = [...headerStalls, ...bodyStalls]
      await Promise.all(stalls.map((stall) => stall.connected))
      const heldWhileServing = stalls.filter((stall) => stall.isOpen()).length
      const meanwhile = [
        await freshStatus('/api/community/health'),
        await freshStatus('/api/agents/register', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'prompt' }),
        }),
      ]
      expect(meanwhile).toEqual([200, 200])
      expect(heldWhileServing).toBe(stalls.length)
      const [stalled, trickled] = await Promise.all(bodyStalls.map((stall) => stall.closed))
      expect(stalled).toEqual({ text: '', closedByServer: true, dripped: 0 })
      expect(trickled).toMatchObject({ text: '', closedByServer: true })
      expect(trickled?.dripped).toBeLessThan(trickle.length)
      const headerAnswers = await Promise.all(headerStalls.map((stall) => stall.closed))
      for (const stall of headerAnswers) expect(stall).toMatchObject({ text: '', closedByServer: true })
      expect(headerAnswers[2]?.dripped).toBeLessThan(slowHeader.length)
      expect((await fetch(`${server.base}/api/community/agents/slowpoke`)).status).toBe(404)
    },
    2 * GIVE_UP_MS,
  )

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
  }, 300_000)
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
