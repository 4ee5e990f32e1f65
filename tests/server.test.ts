import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { Subprocess } from 'bun'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { signedRequestHeaders, type TestWallet } from '../packages/server/src/testing/http.ts'
import { sseReader } from '../packages/server/src/testing/sse.ts'
import { freePort, runToEnd, waitForOk } from './support/process.ts'

const root = resolve(import.meta.dir, '..')
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-server-'))
const port = freePort()
const base = `http://127.0.0.1:${port}`
const databaseUrl = `file:${join(folder, 'data/market.db')}`
const otherPort = freePort()
const otherBase = `http://127.0.0.1:${otherPort}`
let server: Subprocess
let other: Subprocess

/** Starts `bun start` on `port` over the shared test database. */
function startServer(serverPort: number): Subprocess {
  return Bun.spawn(['bun', 'start'], {
    cwd: root,
    env: cleanEnv({ PORT: String(serverPort), HOST: '127.0.0.1', DATABASE_URL: databaseUrl }),
    stdout: 'ignore',
    stderr: 'inherit',
  })
}

/** The environment a user would give `bun start`, without anything from this test runner. */
const cleanEnv = (extra: Record<string, string>) => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: folder,
  ...extra,
})

beforeAll(async () => {
  server = startServer(port)
  other = startServer(otherPort)
  await waitForOk(`${base}/api/community/health`, server)
  await waitForOk(`${otherBase}/api/community/health`, other)
})

afterAll(() => {
  server?.kill()
  other?.kill()
  rmSync(folder, { recursive: true, force: true })
})

describe('bun start', () => {
  test('behavior: serves the registry over real HTTP on a file database', async () => {
    const registered = await fetch(`${base}/api/agents/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'tcp-agent', skills: ['ping'] }),
    })
    expect(registered.status).toBe(200)
    const { apiKey } = (await registered.json()) as { apiKey: string }
    const beat = await fetch(`${base}/api/v1/agents/tcp-agent/heartbeat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}` },
    })
    expect(beat.status).toBe(200)
    const card = await fetch(`${base}/api/agents/tcp-agent/agent-card.json`)
    expect(((await card.json()) as { url: string }).url).toBe(`http://localhost:${port}/agents/tcp-agent`)
  })

  test('error: a chunked body over 64 KiB gets a 413 problem from the real server', async () => {
    const chunk = new TextEncoder().encode('x'.repeat(8192))
    let sent = 0
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 12) controller.enqueue(chunk)
        else controller.close()
      },
    })
    const response = await fetch(`${base}/api/agents/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      // @ts-expect-error: Bun's RequestInit accepts duplex for streamed bodies
      duplex: 'half',
    })
    expect(response.status).toBe(413)
    expect(response.headers.get('content-type')).toBe('application/problem+json')
  })

  test('behavior: an SSE client gets an event within a second, also when another process sharing the database wrote it', async () => {
    const controller = new AbortController()
    const response = await fetch(`${base}/api/feed/live`, {
      headers: { accept: 'text/event-stream' },
      signal: controller.signal,
    })
    const stream = sseReader(response)
    const register = (at: string, name: string) =>
      fetch(`${at}/api/agents/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name }),
      })
    let started = performance.now()
    expect((await register(base, 'sse-local')).status).toBe(200)
    const [local] = await stream.waitFor(1, 1000)
    const localMs = performance.now() - started
    expect(local?.data).toMatchObject({ kind: 'agent.registered', agent: 'sse-local' })

    started = performance.now()
    expect((await register(otherBase, 'sse-remote')).status).toBe(200)
    const [, remote] = await stream.waitFor(2, 1000)
    const remoteMs = performance.now() - started
    expect(remote?.data).toMatchObject({ kind: 'agent.registered', agent: 'sse-remote' })
    console.log(`sse: same process ${localMs.toFixed(0)} ms, other process ${remoteMs.toFixed(0)} ms`)
    controller.abort()
  })

  test("behavior: a read cached by one process shows another process's write (card, record, list)", async () => {
    type Json = { apiKey: string; description: string; bio: string; agents: { bio: string }[] }
    const json = async (response: Promise<Response>) => (await response).json() as Promise<Json>
    const registered = await json(
      fetch(`${base}/api/agents/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'cached-elsewhere', bio: 'before' }),
      }),
    )
    const reads = () =>
      Promise.all([
        json(fetch(`${base}/api/agents/cached-elsewhere/agent-card.json`)).then((card) => card.description),
        json(fetch(`${base}/api/community/agents/cached-elsewhere`)).then((agent) => agent.bio),
        json(fetch(`${base}/api/community/agents?q=cached-elsewhere`)).then((page) => page.agents[0]?.bio),
      ])
    expect(await reads()).toEqual(['before', 'before', 'before'])
    expect(await reads()).toEqual(['before', 'before', 'before'])
    const updated = await fetch(`${otherBase}/api/agents/cached-elsewhere`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${registered.apiKey}` },
      body: JSON.stringify({ bio: 'after' }),
    })
    expect(updated.status).toBe(200)
    await Bun.sleep(5) // the store reads the change counter at most every 2 ms
    expect(await reads()).toEqual(['after', 'after', 'after'])
  })

  test('behavior: two processes pairing one code at once give one 200 and one 409', async () => {
    for (let round = 0; round < 5; round++) {
      const registered = await fetch(`${base}/api/agents/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: `contested-${round}` }),
      })
      const { pairingCode } = (await registered.json()) as { pairingCode: string }
      const pair = async (at: string, username: string, wallet: TestWallet) => {
        const path = `/api/community/users/${username}/pair-agent`
        const body = JSON.stringify({ pairingCode })
        // Each process's BASE_URL is its default, http://localhost:{PORT}: the marketplace the proof names.
        const market = `http://localhost:${new URL(at).port}`
        const proof = await signedRequestHeaders(wallet, { market, method: 'POST', path, body }, new Date())
        return fetch(`${at}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-wallet-address': wallet.address, ...proof },
          body,
        })
      }
      const statuses = await Promise.all([
        pair(base, `left${round}`, privateKeyToAccount(generatePrivateKey())),
        pair(otherBase, `right${round}`, privateKeyToAccount(generatePrivateKey())),
      ]).then((responses) => responses.map((response) => response.status).sort())
      expect(statuses).toEqual([200, 409])
    }
  })

  test('error: a malformed variable stops start-up with exit 1 and one clear line', async () => {
    const cases: [Record<string, string>, string][] = [
      [{ PORT: 'abc' }, 'PORT'],
      [{ PORT: '70000' }, 'PORT'],
      [{ BASE_URL: 'not a url' }, 'BASE_URL'],
      [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
      [{ DATABASE_POOL_SIZE: '0' }, 'DATABASE_POOL_SIZE'],
      [{ DATABASE_TLS: 'maybe' }, 'DATABASE_TLS'],
      [{ USDC_CONTRACT: '0x1234' }, 'USDC_CONTRACT'],
      [{ ESCROW_CONTRACT: 'nope' }, 'ESCROW_CONTRACT'],
      [{ MIN_CONFIRMATIONS: '0' }, 'MIN_CONFIRMATIONS'],
      [{ CHAIN_ID: '-1' }, 'CHAIN_ID'],
      [{ MPP_SECRET_KEY: 'short' }, 'MPP_SECRET_KEY'],
      [{ RATE_LIMITS: 'maybe' }, 'RATE_LIMITS'],
      [{ RATE_LIMIT_POLICIES: 'register=10' }, 'RATE_LIMIT_POLICIES'],
      [{ RATE_LIMIT_POLICIES: 'everything=1/60' }, 'RATE_LIMIT_POLICIES'],
      [{ TRUST_PROXY: 'yes' }, 'TRUST_PROXY'],
      [{ CORS_ORIGINS: 'https://app.example/path' }, 'CORS_ORIGINS'],
      [{ LOG_LEVEL: 'debug' }, 'LOG_LEVEL'],
      [{ SMTP_OUTBOUND_URL: 'http://mail' }, 'SMTP_OUTBOUND_URL'],
    ]
    for (const [env, name] of cases) {
      const run = await runToEnd(['bun', 'packages/server/src/main.ts'], {
        cwd: root,
        env: cleanEnv({ DATABASE_URL: ':memory:', ...env }),
      })
      expect(run.exitCode, name).toBe(1)
      const lines = run.stderr.trim().split('\n')
      expect(lines, name).toHaveLength(1)
      // A secret is named without its value (tests/logs.test.ts); every other setting is quoted.
      expect(lines[0], name).toMatch(new RegExp(`^agentmarket: ${name}(=| is invalid: )`))
      if (name === 'MPP_SECRET_KEY') expect(lines[0]).not.toContain('short')
    }
  })
})
