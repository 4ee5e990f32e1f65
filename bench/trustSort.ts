/**
 * The agent list sorted by trust, in process: 5,000 agents with varied trust counters (credit from established and
 * new buyers, late jobs, weighted votes, heartbeats), then `listAgents({ sort: 'trust', limit: 20 })` 200 times on
 * libSQL (a file, Bun's SQLite) and on PostgreSQL (a server of its own on this machine). Prints the CPU per page:
 * this process's (process.cpuUsage) and, for PostgreSQL, that of the server backends serving the store too (/proc),
 * since there the sort runs in the server.
 * Usage: bun bench/trustSort.ts [--only libsql|postgres] [--agents N] [--calls N]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AgentListQuery, AgentRecord, Store } from '@agentmarket/core'
import { PAID_TRUST_STEPS } from '@agentmarket/core/rows'
import { libsqlStore } from '@agentmarket/store-libsql'
import postgres from 'postgres'
import { sampleAgent, sampleSkill, T0 } from '../packages/core/src/testing/fixtures.ts'
import { openDatabase } from '../packages/store-libsql/src/open.ts'
import { openPostgres } from '../packages/store-postgres/src/open.ts'
import { postgresStore } from '../packages/store-postgres/src/postgresStore.ts'
import { startPostgres } from '../tests/support/postgres.ts'
import { cpuMs } from './lib/proc.ts'

const flag = (name: string) => {
  const index = process.argv.indexOf(name)
  return index > 0 ? process.argv[index + 1] : undefined
}
const AGENTS = Number(flag('--agents') ?? 5_000)
const CALLS = Number(flag('--calls') ?? 200)
const only = flag('--only')
const NOW = new Date(T0.getTime() + 60_000)

/** A small deterministic generator (mulberry32), so every run lists the same market. */
function random(seed: number) {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

/** Agent `index` of the market: most with some credit, part of it from established buyers, some late or rated. */
function marketAgent(index: number, next: () => number): AgentRecord {
  const pick = (n: number) => Math.floor(next() * n)
  const step = PAID_TRUST_STEPS[pick(PAID_TRUST_STEPS.length)] ?? 0n
  const credited = next() < 0.8
  const credit = credited ? step + BigInt(pick(1_000_000)) : 0n
  const established = credited && next() < 0.6 ? (credit * BigInt(pick(101))) / 100n : 0n
  const rated = pick(4)
  const name = `agent-${index}`
  return sampleAgent({
    name,
    apiKeyHash: `k-${name}`,
    pairingCodeHash: `p-${name}`,
    bio: next() < 0.7 ? 'does things' : null,
    skills: next() < 0.8 ? [sampleSkill({ name: 'Thing', slug: 'thing' })] : [],
    lastSeen: next() < 0.5 ? new Date(NOW.getTime() - pick(3_600_000)) : null,
    lastActiveAt: new Date(T0.getTime() - pick(1_000_000)),
    verifiedMilestones: pick(7),
    trustCreditBaseUnits: credit,
    payingBuyers: credited ? 1 + pick(12) : 0,
    establishedCreditBaseUnits: established,
    establishedBuyers: established > 0n ? 1 + pick(8) : 0,
    onTimeTasks: pick(20),
    lateTasks: pick(3),
    ratedBuyers: rated,
    ratingWeight: rated * 700,
    ratingVotes: rated * pick(700),
  })
}

/** Inserts the market's agents into `store`. */
async function seed(store: Store) {
  const next = random(37)
  for (let index = 0; index < AGENTS; index++) await store.insertAgent(marketAgent(index, next), [])
}

/** CPU (user + system, ms) of the processes `pids`, from /proc. */
function cpuOf(pids: number[]): number {
  let total = 0
  for (const pid of pids) {
    try {
      total += cpuMs(pid)
    } catch {
      // A backend that ended.
    }
  }
  return total
}

/** Lists the first page by trust `CALLS` times: this process's CPU per page, and the server's if `server` says. */
async function measure(store: Store, server?: () => number) {
  const query = { sort: 'trust', now: NOW, limit: 20, offset: 0 } as AgentListQuery
  const first = await store.listAgents(query)
  for (let warm = 0; warm < 10; warm++) await store.listAgents(query)
  const cpu = process.cpuUsage()
  const serverBefore = server?.() ?? 0
  for (let call = 0; call < CALLS; call++) await store.listAgents(query)
  const used = process.cpuUsage(cpu)
  const serverUsed = (server?.() ?? 0) - serverBefore
  return {
    processMs: (used.user + used.system) / 1000 / CALLS,
    serverMs: serverUsed / CALLS,
    top: first.agents.slice(0, 3).map((agent) => agent.name),
  }
}

if (only !== 'postgres') {
  const folder = mkdtempSync(join(tmpdir(), 'agentmarket-trust-sort-'))
  const store = libsqlStore(await openDatabase(`file:${join(folder, 'market.db')}`))
  await seed(store)
  const result = await measure(store)
  console.log(
    `libSQL: ${AGENTS} agents, ${CALLS} pages of 20 by trust: ${result.processMs.toFixed(2)} ms CPU a page (top ${result.top.join(', ')})`,
  )
  await store.close()
  rmSync(folder, { recursive: true, force: true })
}

if (only !== 'libsql') {
  const server = await startPostgres()
  try {
    const url = await server.createDatabase()
    const database = await openPostgres(url, { max: 1 })
    const store = await postgresStore(database)
    await seed(store)
    const raw = postgres(url, { max: 1, onnotice: () => {} })
    await raw`vacuum analyze agents`
    // The store's own backends (its pool and its LISTEN connection), not autovacuum or the checkpointer.
    const backends = await raw`select pid from pg_stat_activity where application_name = ${database.nodeId}`
    await raw.end()
    const result = await measure(store, () => cpuOf(backends.map((row) => Number(row.pid))))
    console.log(
      `PostgreSQL: ${AGENTS} agents, ${CALLS} pages of 20 by trust: ${result.serverMs.toFixed(2)} ms server CPU and ${result.processMs.toFixed(2)} ms client CPU a page (top ${result.top.join(', ')})`,
    )
    await store.close()
  } finally {
    await server.stop()
  }
}
