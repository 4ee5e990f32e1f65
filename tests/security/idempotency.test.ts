import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
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
