import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { signedRequestHeaders } from '../packages/server/src/testing/http.ts'
import { type MarketServer, startMarketServer } from './support/process.ts'

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-limits-'))
let behindProxy: MarketServer
let direct: MarketServer

beforeAll(async () => {
  const common = { CHAIN_RPC_URL: 'http://127.0.0.1:9', RATE_LIMITS: 'on' }
  ;[behindProxy, direct] = await Promise.all([
    startMarketServer({ ...common, DATABASE_URL: `file:${join(folder, 'proxy.db')}`, TRUST_PROXY: '1' }),
    startMarketServer({ ...common, DATABASE_URL: `file:${join(folder, 'direct.db')}` }),
  ])
  // Two servers migrating on a busy machine: a generous bound, so the verdict never depends on its speed.
}, 300_000)
afterAll(() => {
  behindProxy.stop()
  direct.stop()
  rmSync(folder, { recursive: true, force: true })
})

type Call = { method?: string; body?: unknown; from?: string; key?: string; headers?: Record<string, string> }

/** One request; `from` is the address the trusted proxy reports in X-Forwarded-For. */
function call(
  server: MarketServer,
  path: string,
  { method = 'GET', body, from, key, headers = {} }: Call = {},
) {
  const sent: Record<string, string> = { ...headers }
  if (body !== undefined) sent['content-type'] = 'application/json'
  if (from) sent['x-forwarded-for'] = from
  if (key) sent.authorization = `Bearer ${key}`
  return fetch(`${server.base}${path}`, {
    method,
    headers: sent,
    body: body === undefined ? undefined : JSON.stringify(body),
  })
}

/** Sends `count` requests one after another; their statuses. */
async function statuses(
  count: number,
  send: (index: number) => Promise<Response>,
  { untilRefusedWithin = 0 } = {},
): Promise<number[]> {
  const seen: number[] = []
  // Past `count`, up to `untilRefusedWithin` more until one is refused: the bucket refills while the test runs, so a
  // slow machine (two CI runs at once) earned more than `count` before its refusal.
  const refused = () => seen.includes(429)
  for (let index = 0; index < count || (!refused() && index < count + untilRefusedWithin); index++) {
    const answer = await send(index)
    await answer.arrayBuffer()
    seen.push(answer.status)
  }
  return seen
}

/** Checks a 429: a problem, Retry-After, and the RateLimit fields of `policy`. */
async function expectThrottled(answer: Response, policy: string) {
  expect(answer.status).toBe(429)
  expect(answer.headers.get('content-type')).toBe('application/problem+json')
  expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0)
  expect(answer.headers.get('ratelimit-policy')).toBe(policy)
  expect(answer.headers.get('ratelimit')).toMatch(/^"\w+";r=0;t=\d+$/)
  expect(await answer.json()).toMatchObject({ status: 429, code: 'rate_limited' })
}

describe('rate limits (bun start, RATE_LIMITS=on)', () => {
  test('behavior: an address registers 10 agents an hour; the 11th is a 429 that creates nothing', async () => {
    const from = '203.0.113.10'
    const register = (name: string) =>
      call(behindProxy, '/api/agents/register', { method: 'POST', body: { name }, from })
    const first = await register('limit-0')
    expect(first.headers.get('ratelimit-policy')).toBe('"register";q=10;w=3600')
    expect(first.headers.get('ratelimit')).toBe('"register";r=9;t=360')
    expect(await statuses(9, (i) => register(`limit-${i + 1}`))).toEqual(Array(9).fill(200))
    await expectThrottled(await register('limit-10'), '"register";q=10;w=3600')
    expect((await call(behindProxy, '/api/community/agents/limit-10')).status).toBe(404)
    // Another client behind the same proxy has its own bucket.
    expect(
      (
        await call(behindProxy, '/api/agents/register', {
          method: 'POST',
          body: { name: 'limit-10' },
          from: '203.0.113.11',
        })
      ).status,
    ).toBe(200)
  })

  test('behavior: refused registrations (400, 409) spend only the larger register_attempt bucket, never the 10 an hour', async () => {
    const from = '203.0.113.20'
    const register = (body: unknown) =>
      call(behindProxy, '/api/agents/register', { method: 'POST', body, from })
    expect((await register({ name: 'taken-name' })).status).toBe(200)
    const mistakes = await statuses(20, (i) =>
      register(i % 2 ? { name: 'taken-name' } : { name: `try-${i}`, Skills: ['x'] }),
    )
    expect(mistakes).toEqual(Array.from({ length: 20 }, (_, i) => (i % 2 ? 409 : 400)))
    // Nine registrations are still left of the ten an hour.
    const first = await register({ name: 'after-mistakes' })
    expect(first.status).toBe(200)
    expect(first.headers.get('ratelimit')).toBe('"register";r=8;t=720')
    // Trial and error is bounded too: 60 attempts an hour in all.
    const rest = await statuses(38, (i) => register({ name: `try-more-${i}`, Skills: [] }))
    expect(rest).toEqual(Array(38).fill(400))
    await expectThrottled(
      await register({ name: 'one-too-many', Skills: [] }),
      '"register_attempt";q=60;w=3600',
    )
  })

  test('behavior: without TRUST_PROXY, X-Forwarded-For is ignored, so forging it gains nothing', async () => {
    const register = (index: number) =>
      call(direct, '/api/agents/register', {
        method: 'POST',
        body: { name: `forged-${index}` },
        from: `198.51.100.${index}`,
      })
    const seen = await statuses(11, register)
    expect(seen.slice(0, 10)).toEqual(Array(10).fill(200))
    expect(seen[10]).toBe(429)
  })

  test('behavior: pairing code guesses are limited to 10 per 15 minutes per address', async () => {
    const guesser = privateKeyToAccount(generatePrivateKey())
    const path = '/api/community/users/guesser/pair-agent'
    // Each guess is signed afresh, a second apart: a wallet proof is accepted once.
    let signed = 0
    const guess = async () =>
      call(behindProxy, path, {
        method: 'POST',
        body: { pairingCode: 'AGM-ABCD-EFGH' },
        from: '203.0.113.20',
        headers: {
          'x-wallet-address': guesser.address,
          ...(await signedRequestHeaders(
            guesser,
            {
              market: `http://localhost:${new URL(behindProxy.base).port}`,
              method: 'POST',
              path,
              body: JSON.stringify({ pairingCode: 'AGM-ABCD-EFGH' }),
            },
            new Date(Date.now() + signed++),
          )),
        },
      })
    const seen = await statuses(10, guess)
    expect(seen).toEqual(Array(10).fill(404))
    await expectThrottled(await guess(), '"pairing";q=10;w=900')
  })

  test('behavior: key rotations are limited to 10 an hour per address in their own bucket; the 11th is a 429 that changes no key', async () => {
    const from = '203.0.113.70'
    const registered = await call(behindProxy, '/api/agents/register', {
      method: 'POST',
      body: { name: 'rotating-agent' },
      from,
    })
    let { apiKey } = (await registered.json()) as { apiKey: string }
    const rotate = () =>
      call(behindProxy, '/api/agents/rotating-agent/keys/rotate', { method: 'POST', key: apiKey, from })
    for (let index = 0; index < 10; index++) {
      const answer = await rotate()
      expect(answer.status).toBe(200)
      ;({ apiKey } = (await answer.json()) as { apiKey: string })
    }
    await expectThrottled(await rotate(), '"keys";q=10;w=3600')
    // The refused rotation changed nothing: the last key still works, and so do the address's other buckets.
    const beat = await call(behindProxy, '/api/agents/rotating-agent/heartbeat', {
      method: 'POST',
      key: apiKey,
      from,
    })
    expect(beat.status).toBe(200)
    const another = await call(behindProxy, '/api/agents/register', {
      method: 'POST',
      body: { name: 'rotating-agent-2' },
      from,
    })
    expect(another.status).toBe(200)
  })

  test('behavior: orders and payment checks are limited to 30 a minute per address', async () => {
    const order = () =>
      call(behindProxy, '/api/agents/limit-0/tasks', {
        method: 'POST',
        body: { skill: 'nothing' },
        from: '203.0.113.30',
      })
    const seen = await statuses(30, order)
    expect(seen.every((status) => status !== 429)).toBe(true)
    await expectThrottled(await order(), '"payment";q=30;w=60')
  })

  test('behavior: one API key is limited wherever it calls from (120 writes a minute)', async () => {
    const registered = await call(behindProxy, '/api/agents/register', {
      method: 'POST',
      body: { name: 'busy-agent' },
      from: '203.0.113.40',
    })
    const { apiKey } = (await registered.json()) as { apiKey: string }
    const beat = (index: number) =>
      call(behindProxy, '/api/agents/busy-agent/heartbeat', {
        method: 'POST',
        key: apiKey,
        from: `192.0.2.${index % 250}`,
      })
    const started = performance.now()
    const seen = await statuses(130, beat, { untilRefusedWithin: 200 })
    const seconds = (performance.now() - started) / 1000
    expect(seen.slice(0, 120).every((status) => status === 200)).toBe(true)
    // A token comes back every 500 ms: a slow run may earn one or two more, never ten.
    const allowed = seen.filter((status) => status === 200).length
    expect(allowed).toBeLessThanOrEqual(120 + Math.ceil(seconds * 2))
    expect(seen).toContain(429)
  })

  test('behavior: MCP tool calls spend the same buckets as their HTTP routes', async () => {
    const from = '203.0.113.50'
    for (let i = 0; i < 10; i++)
      await call(behindProxy, '/api/agents/register', {
        method: 'POST',
        body: { name: `mcp-limit-${i}` },
        from,
      })
    const answer = await call(behindProxy, '/mcp', {
      method: 'POST',
      from,
      headers: { accept: 'application/json, text/event-stream' },
      body: {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'register_agent', arguments: { name: 'mcp-over' } },
      },
    })
    // The tool call itself was admitted (register_attempt); creating an agent was not: a tool error, rate_limited.
    const result = (await answer.json()) as { result: { isError: boolean; content: { text: string }[] } }
    expect(result.result.isError).toBe(true)
    expect(JSON.parse(result.result.content[0]?.text ?? '{}')).toMatchObject({
      status: 429,
      code: 'rate_limited',
    })
    expect((await call(behindProxy, '/api/community/agents/mcp-over')).status).toBe(404)
  })

  test('behavior: reads are limited too (1,200 a minute per address), and another address still reads', async () => {
    const read = () => call(behindProxy, '/api/community/health', { from: '203.0.113.60' })
    const started = performance.now()
    let firstRefusal: Response | null = null
    const seen = await statuses(
      1300,
      async () => {
        const answer = await read()
        if (answer.status === 429 && !firstRefusal) firstRefusal = answer.clone()
        return answer
      },
      { untilRefusedWithin: 1000 },
    )
    const seconds = (performance.now() - started) / 1000
    const allowed = seen.filter((status) => status === 200).length
    // The bucket refills at 20 tokens a second while the test runs, so a pause lets a few more through.
    expect(allowed).toBeGreaterThanOrEqual(1200)
    expect(allowed).toBeLessThanOrEqual(1200 + Math.ceil(seconds * 20) + 1)
    expect(seen.slice(0, 1200).every((status) => status === 200)).toBe(true)
    expect(firstRefusal).not.toBeNull()
    await expectThrottled(firstRefusal as unknown as Response, '"read";q=1200;w=60')
    expect((await call(behindProxy, '/api/community/health', { from: '203.0.113.61' })).status).toBe(200)
  })
})
