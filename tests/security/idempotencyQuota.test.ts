import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type CallAnswer, expectProblem, jsonCaller } from '../support/examples.ts'
import { type MigratedPostgres, startMigratedPostgres } from '../support/postgres.ts'
import { type MarketServer, startMarketServer } from '../support/process.ts'
import { type SharedDatabase, sharedLibsqlFile, sharedPostgres } from '../support/sharedDatabase.ts'

// Attack (issue 39, F4): every keyed write keeps its answer 24 hours for replay, so a client writing keyed writes all
// day makes the store keep gigabytes. Mallory writes many keyed milestones, under one key and then under more keys
// from the same address, round-robin over two bun start processes on one database (a libSQL file, then PostgreSQL);
// the answers the store keeps for her stay within her quota (measured in the database), and Alice's replays are
// unaffected.

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-idem-quota-'))
const ALICE = '203.0.113.10'
const MALLORY = '198.51.100.66'
const QUOTA = 5
let servers: MarketServer[] = []
let calls: ReturnType<typeof jsonCaller>[] = []
let database: SharedDatabase
let postgresServer: MigratedPostgres | null = null

/** The caller of process `index` (0 or 1). */
const on = (index: number) => {
  const call = calls[index % calls.length]
  if (!call) throw new Error(`no server ${index}`)
  return call
}

/** Registers `name` from `address`; answers its key. */
async function register(address: string, name: string): Promise<string> {
  const answer = await on(0)('POST', '/api/agents/register', {
    body: { name },
    headers: { 'x-forwarded-for': address },
  })
  if (answer.status !== 200)
    throw new Error(`register ${name}: ${answer.status} ${JSON.stringify(answer.json)}`)
  return answer.json.apiKey
}

/** A keyed milestone of `agent` from `address`, sent to process `server`. */
const milestone = (server: number, address: string, agent: string, key: string, idempotencyKey: string) =>
  on(server)('POST', `/api/agents/${agent}/milestones`, {
    key,
    body: { date: '2026-01-02', title: `step ${idempotencyKey}` },
    headers: { 'idempotency-key': idempotencyKey, 'x-forwarded-for': address },
  })

/** What the store keeps for replays, read from the database: kept answers, their stored bytes, quota rows. */
async function stored() {
  const rows = await database.rows("select key, value from kv where key like 'idem%'")
  const parsed = (row: Record<string, unknown>) =>
    typeof row.value === 'string' ? JSON.parse(row.value) : row.value
  const entries = rows.filter((row) => String(row.key).startsWith('idem:')).map(parsed)
  const kept = entries.filter((entry) => entry.sealed)
  return {
    kept: kept.length,
    keptBytes: kept.reduce((sum, entry) => sum + entry.sealed.iv.length + entry.sealed.data.length, 0),
    markers: entries.length - kept.length,
    quotaRows: rows.filter((row) => String(row.key).startsWith('idem-quota:')).length,
  }
}

/** Starts two processes on `shared`, each keeping QUOTA answers per client. */
async function startOn(shared: SharedDatabase) {
  database = shared
  const env = {
    DATABASE_URL: shared.url,
    CHAIN_RPC_URL: 'http://127.0.0.1:9',
    TRUST_PROXY: '1',
    IDEMPOTENCY_KEPT_ANSWERS: String(QUOTA),
  }
  servers = [await startMarketServer(env), await startMarketServer(env)]
  calls = servers.map((server) => jsonCaller(server.base))
}

/** Stops the processes and closes the test's connection. */
async function stop() {
  for (const server of servers) server.stop()
  servers = []
  await database?.close()
}

afterAll(async () => {
  await stop()
  await postgresServer?.stop()
  rmSync(folder, { recursive: true, force: true })
})

const STORES: [string, () => Promise<SharedDatabase>][] = [
  ['a libSQL file', async () => sharedLibsqlFile(join(folder, 'market.db'))],
  [
    'PostgreSQL',
    async () => {
      postgresServer = await startMigratedPostgres()
      return sharedPostgres(postgresServer)
    },
  ],
]

describe.each(STORES)('each client holds at most its quota of kept answers (%s)', (_, open) => {
  beforeAll(async () => startOn(await open()), 120_000)
  afterAll(stop)

  test('attack: many keyed writes from one client keep at most its quota, across processes and API keys; another client replays as before', async () => {
    const aliceKey = await register(ALICE, 'alice-agent')
    const alice: CallAnswer[] = []
    for (let i = 0; i < 3; i++) alice.push(await milestone(i, ALICE, 'alice-agent', aliceKey, `alice-${i}`))
    const before = await stored()
    expect(before.kept).toBe(3)

    // Mallory, one address: 40 keyed writes under one API key, then 20 more under each of two more keys.
    const agents = ['mallory-1', 'mallory-2', 'mallory-3']
    const keys = [await register(MALLORY, agents[0] ?? ''), await register(MALLORY, agents[1] ?? '')]
    keys.push(await register(MALLORY, agents[2] ?? ''))
    const writes: { agent: string; key: string; idempotencyKey: string }[] = []
    for (let i = 0; i < 40; i++)
      writes.push({ agent: 'mallory-1', key: keys[0] ?? '', idempotencyKey: `m-${i}` })
    for (const [index, agent] of agents.slice(1).entries())
      for (let i = 0; i < 20; i++)
        writes.push({ agent, key: keys[index + 1] ?? '', idempotencyKey: `m${index}-${i}` })
    // Ten at a time over both processes: the quota is counted atomically across them.
    for (let start = 0; start < writes.length; start += 10) {
      const batch = writes.slice(start, start + 10)
      const answers = await Promise.all(
        batch.map((write, i) => milestone(start + i, MALLORY, write.agent, write.key, write.idempotencyKey)),
      )
      expect(answers.map((answer) => answer.status)).toEqual(batch.map(() => 201))
    }

    const after = await stored()
    // Her kept answers: her quota, however many keys and processes she spreads them over.
    expect(after.kept - before.kept).toBe(QUOTA)
    const perAnswer = before.keptBytes / before.kept
    expect(after.keptBytes - before.keptBytes).toBeLessThan(perAnswer * QUOTA * 1.5)
    // Every write still has its key (a small marker), so none runs twice; the bookkeeping is one small row per owner
    // charged: two addresses and two API keys (Mallory's later keys were refused at her address, so never charged).
    expect(after.markers).toBe(writes.length - QUOTA)
    expect(after.quotaRows).toBe(4)

    // A retry past her quota is told to read the resource; nothing runs twice.
    const last = writes.at(-1)
    if (!last) throw new Error('no writes')
    const retry = await milestone(1, MALLORY, last.agent, last.key, last.idempotencyKey)
    // Read before expectProblem, whose matchers take the place of the fields they match.
    expect(retry.json.detail).toContain('quota of kept answers')
    expectProblem(retry, 409, 'idempotency_replay_expired')
    const listed = await on(0)('GET', `/api/agents/${last.agent}/milestones`)
    expect(listed.json.total ?? listed.json.milestones.length).toBe(20)

    // Alice's earlier answers replay on either process, and her new writes are kept.
    for (const [i, first] of alice.entries()) {
      const replay = await milestone(i + 1, ALICE, 'alice-agent', aliceKey, `alice-${i}`)
      expect(replay.status).toBe(201)
      expect(replay.headers.get('idempotent-replayed')).toBe('true')
      expect(replay.json).toEqual(first.json)
    }
    const fresh = await milestone(0, ALICE, 'alice-agent', aliceKey, 'alice-late')
    const again = await milestone(1, ALICE, 'alice-agent', aliceKey, 'alice-late')
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(again.json).toEqual(fresh.json)
  })
})
