import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { testApp } from '../../packages/server/src/testing/http.ts'
import { expectProblem, jsonCaller } from '../support/examples.ts'
import { type MarketServer, startMarketServer } from '../support/process.ts'

// Attack: a stranger who knows (or guesses) another client's Idempotency-Key and order body uses it to read that
// client's task id, or sends it first to block the real client. Keys are scoped by client address (as TRUST_PROXY
// names it; this test plays the one trusted proxy and writes X-Forwarded-For).

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-idem-'))
let server: MarketServer
let call: ReturnType<typeof jsonCaller>
const ALICE = '203.0.113.10'
const MALLORY = '198.51.100.66'

beforeAll(async () => {
  server = await startMarketServer({
    DATABASE_URL: `file:${join(folder, 'market.db')}`,
    CHAIN_RPC_URL: 'http://127.0.0.1:9',
    TRUST_PROXY: '1',
  })
  call = jsonCaller(server.base)
  await call('POST', '/api/agents/register', { body: { name: 'idem-seller', skills: ['Ping'] } })
})

afterAll(() => {
  server?.stop()
  rmSync(folder, { recursive: true, force: true })
})

/** An order of Ping from the client at `address` with an Idempotency-Key. */
const orderFrom = (address: string, key: string, params: Record<string, unknown> = { q: 'x' }) =>
  call('POST', '/api/agents/idem-seller/tasks', {
    body: { skill: 'ping', params },
    headers: { 'idempotency-key': key, 'x-forwarded-for': address },
  })

describe('Idempotency-Keys are scoped per client', () => {
  test("attack: the same key and body from a stranger never returns the first client's task", async () => {
    const first = await orderFrom(ALICE, 'order-1')
    expect(first.status).toBe(201)
    const stranger = await orderFrom(MALLORY, 'order-1')
    expect(stranger.status).toBe(201)
    expect(stranger.headers.get('idempotent-replayed')).toBeNull()
    expect(stranger.json.task_id).not.toBe(first.json.task_id)
    expect(JSON.stringify(stranger.json)).not.toContain(first.json.task_id)

    const retry = await orderFrom(ALICE, 'order-1')
    expect(retry.headers.get('idempotent-replayed')).toBe('true')
    expect(retry.json.task_id).toBe(first.json.task_id)
  })

  test('attack: a key squatted first by a stranger (other body) neither blocks nor answers the real client', async () => {
    const squat = await orderFrom(MALLORY, 'order-2', { squat: true })
    expect(squat.status).toBe(201)
    const real = await orderFrom(ALICE, 'order-2')
    expect(real.status).toBe(201)
    expect(real.headers.get('idempotent-replayed')).toBeNull()
    expect(real.json.task_id).not.toBe(squat.json.task_id)
    expect(real.json.params).toEqual({ q: 'x' })
    expect((await orderFrom(ALICE, 'order-2')).json.task_id).toBe(real.json.task_id)
    // Within one client a key still means one request: another body under it is a conflict.
    expectProblem(await orderFrom(ALICE, 'order-2', { other: 1 }), 409, 'idempotency_key_reused')
  })
})

// Attack: the answers that hold a secret shown once (registration's apiKey and pairingCode, a webhook's secret) are
// replayed to a retry; a stranger tries to get them replayed to itself: the same key and body from another address,
// the key with another body, a guessed key, the key after the replay window; and a thief of the database looks for
// them in clear.

/** A registration of `name` from the client at `address` under `key`. */
const registerFrom = (address: string, key: string, name = 'secret-holder', bio = 'mine') =>
  call('POST', '/api/agents/register', {
    body: { name, bio },
    headers: { 'idempotency-key': key, 'x-forwarded-for': address },
  })

describe('a replayed secret goes only to the client that asked for it', () => {
  test("attack: another client replaying someone's key and body gets no secret and creates nothing", async () => {
    const first = await registerFrom(ALICE, 'reg-1')
    expect(first.status).toBe(200)
    expect(first.json.apiKey).toStartWith('amk_')
    const retry = await registerFrom(ALICE, 'reg-1')
    expect(retry.headers.get('idempotent-replayed')).toBe('true')
    expect(retry.json.apiKey).toBe(first.json.apiKey)
    const stranger = await registerFrom(MALLORY, 'reg-1')
    expectProblem(stranger, 409, 'name_taken')
    expect(JSON.stringify(stranger.json)).not.toContain(first.json.apiKey)
  })

  test('attack: the same key with another body, and a guessed key, get no secret', async () => {
    const first = await registerFrom(ALICE, 'reg-2', 'second-holder')
    expect(first.status).toBe(200)
    const otherBody = await registerFrom(ALICE, 'reg-2', 'second-holder', 'not mine')
    expectProblem(otherBody, 409, 'idempotency_key_reused')
    expect(JSON.stringify(otherBody.json)).not.toContain(first.json.apiKey)
    const guessed = await registerFrom(ALICE, 'reg-3', 'second-holder')
    expectProblem(guessed, 409, 'name_taken')
    expect(JSON.stringify(guessed.json)).not.toContain(first.json.apiKey)
  })

  test('attack: a replay after the 10-minute window gets no secret and runs nothing again', async () => {
    const app = await testApp()
    const seller = await app.register('window-seller')
    const add = () =>
      app.call('POST', '/api/agents/window-seller/webhooks', {
        key: seller.key,
        body: { url: 'https://93.184.216.34/hook' },
        headers: { 'idempotency-key': 'hook-1' },
      })
    const first = await add()
    expect(first.status).toBe(201)
    app.clock.advance(9 * 60_000)
    expect((await add()).json.secret).toBe(first.json.secret)
    app.clock.advance(2 * 60_000)
    const late = await add()
    expect(late.status).toBe(409)
    expect(late.json.code).toBe('idempotency_replay_expired')
    expect(JSON.stringify(late.json)).not.toContain(first.json.secret)
    const listed = await app.call('GET', '/api/agents/window-seller/webhooks', { key: seller.key })
    expect(listed.json.webhooks).toHaveLength(1)
  })

  test('attack: the database holds neither the secret nor the key in clear', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentmarket-idem-db-'))
    try {
      const app = await testApp(undefined, { databaseUrl: `file:${join(dir, 'market.db')}` })
      const key = 'reg-key-visible-in-clear'
      const first = await app.call('POST', '/api/agents/register', {
        body: { name: 'stored-holder' },
        headers: { 'idempotency-key': key },
      })
      expect(first.status).toBe(200)
      const replay = await app.call('POST', '/api/agents/register', {
        body: { name: 'stored-holder' },
        headers: { 'idempotency-key': key },
      })
      expect(replay.json.apiKey).toBe(first.json.apiKey)
      const db = new Database(join(dir, 'market.db'), { readonly: true })
      const rows = db.query('select key, value from kv').all() as { key: string; value: string }[]
      db.close()
      const dump = JSON.stringify(rows)
      expect(dump).toContain('idem:')
      for (const secret of [first.json.apiKey, first.json.pairingCode, key])
        expect(dump).not.toContain(secret)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
