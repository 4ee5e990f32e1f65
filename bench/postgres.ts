/**
 * PostgreSQL beside libSQL, and three nodes beside one: the same market (seeded as bench/http.ts seeds it, 1,000
 * agents and 10,000 tasks, then moved to PostgreSQL by `agentmarket copy`) served by `bun start` bare (no log, no
 * rate limits) on each store, paths measured in turn with wrk after a warm-up, each beside an Elysia hello world
 * measured just before it; then three nodes on the PostgreSQL database, each driven by its own wrk at once, against
 * one node. PostgreSQL runs on this machine with its default durability (fsync on): the two cores serve wrk, the
 * nodes and PostgreSQL together.
 * Usage: bun bench/postgres.ts [--quick] [--json PATH]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { startPostgres } from '../tests/support/postgres.ts'
import {
  freePort,
  type MarketServer,
  runToEnd,
  startMarketServer,
  waitForOk,
} from '../tests/support/process.ts'
import { call } from './lib/call.ts'
import { finishSection, formatCount, formatMs, sectionFlags, table } from './lib/section.ts'
import { SEARCH_WORD, seededOwner, seedMarket } from './lib/seed.ts'
import { runWrk, type WrkOptions, type WrkResult } from './lib/wrk.ts'

const { quick, json } = sectionFlags()
const seconds = quick ? 1 : 5
const root = resolve(import.meta.dir, '..')
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-bench-pg-'))
const file = `file:${join(folder, 'market.db')}`
const SIZE = quick ? { agents: 200, tasks: 1_000 } : { agents: 1_000, tasks: 10_000 }
const SELLER = 'bench-seller'

await seedMarket(file.slice('file:'.length), SIZE)
const postgres = await startPostgres()
const postgresUrl = await postgres.createDatabase()
const copied = await runToEnd(['bun', 'packages/server/src/main.ts', 'copy', postgresUrl], {
  cwd: root,
  env: { PATH: process.env.PATH ?? '', DATABASE_URL: file },
})
if (copied.exitCode !== 0) throw new Error(`agentmarket copy failed: ${copied.stderr}`)

const bare = { NODE_ENV: 'production', LOG_LEVEL: 'off', CHAIN_RPC_URL: 'http://127.0.0.1:9' }
const libsqlNode = await startMarketServer({ ...bare, DATABASE_URL: file })
const postgresNodes: MarketServer[] = [await startMarketServer({ ...bare, DATABASE_URL: postgresUrl })]

const helloPort = freePort()
const hello = Bun.spawn(['bun', 'bench/hello.ts'], {
  cwd: root,
  env: { PATH: process.env.PATH ?? '', PORT: String(helloPort), NODE_ENV: 'production' },
  stdout: 'ignore',
  stderr: 'inherit',
})
await waitForOk(`http://127.0.0.1:${helloPort}/`, hello)

/** The seller every path reads or writes, on one store: a free skill, a wallet, milestones, a task. */
async function seller(base: string) {
  const { apiKey } = await call(base, 'POST', '/api/agents/register', { name: SELLER, skills: ['Echo'] })
  const key = String(apiKey)
  await call(
    base,
    'PUT',
    `/api/agents/${SELLER}`,
    { walletAddress: '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed' },
    key,
  )
  for (let index = 0; index < 5; index++)
    await call(
      base,
      'POST',
      `/api/agents/${SELLER}/milestones`,
      { date: '2026-10-01', title: `m${index}` },
      key,
      201,
    )
  const task = await call(base, 'POST', `/api/agents/${SELLER}/tasks`, { skill: 'echo' }, undefined, 201)
  return { key, taskId: String(task.task_id) }
}
const onLibsql = await seller(libsqlNode.base)
const onPostgres = await seller(postgresNodes[0]?.base ?? '')

/** A measured path: its request on a store whose seller is `of`. */
type Path = { label: string; request: (of: { key: string; taskId: string }) => WrkOptions & { path: string } }
const get = (path: string) => ({ url: '', seconds, path })
const paths: Path[] = [
  { label: 'GET agent card (cached)', request: () => get(`/api/agents/${SELLER}/agent-card.json`) },
  {
    label: `GET agent list, q=${SEARCH_WORD} (cached)`,
    request: () => get(`/api/community/agents?q=${SEARCH_WORD}&limit=20`),
  },
  { label: 'GET agent record', request: () => get(`/api/community/agents/${SELLER}`) },
  { label: 'GET milestones, first page', request: () => get(`/api/agents/${SELLER}/milestones`) },
  {
    label: 'GET task by id (never cached)',
    request: (of) => get(`/api/agents/${SELLER}/tasks/${of.taskId}`),
  },
  { label: 'GET user profile', request: () => get(`/api/community/users/${seededOwner(0)}`) },
  {
    label: 'POST heartbeat',
    request: (of) => ({ ...get(`/api/agents/${SELLER}/heartbeat`), method: 'POST', bearerKey: of.key }),
  },
  {
    label: 'POST register',
    request: () => ({
      ...get('/api/agents/register'),
      method: 'POST',
      body: '{"name":"%d","bio":"load","skills":["ping"]}',
      uniquePrefix: `pg${Date.now().toString(36)}`,
    }),
  },
  {
    label: 'POST milestone',
    request: (of) => ({
      ...get(`/api/agents/${SELLER}/milestones`),
      method: 'POST',
      body: '{"date":"2026-11-01","title":"load"}',
      bearerKey: of.key,
    }),
  },
  {
    label: 'POST order, free skill',
    request: () => ({ ...get(`/api/agents/${SELLER}/tasks`), method: 'POST', body: '{"skill":"echo"}' }),
  },
  {
    label: 'PUT agent profile (bio)',
    request: (of) => ({
      ...get(`/api/agents/${SELLER}`),
      method: 'PUT',
      body: '{"bio":"load"}',
      bearerKey: of.key,
    }),
  },
]

/** One wrk run of `request` against `base`. */
const drive = (base: string, { path, ...options }: WrkOptions & { path: string }, runSeconds = seconds) =>
  runWrk({ ...options, url: `${base}${path}`, seconds: runSeconds })

type Measured = { label: string; hello: WrkResult; libsql: WrkResult; postgres: WrkResult }
const measured: Measured[] = []
const postgresBase = postgresNodes[0]?.base ?? ''
for (const path of paths) {
  await drive(libsqlNode.base, path.request(onLibsql), 1)
  await drive(postgresBase, path.request(onPostgres), 1)
  const helloRun = await drive(`http://127.0.0.1:${helloPort}`, { url: '', seconds, path: '/' })
  const libsql = await drive(libsqlNode.base, path.request(onLibsql))
  const onPg = await drive(postgresBase, path.request(onPostgres))
  for (const [store, result] of [
    ['libSQL', libsql],
    ['PostgreSQL', onPg],
  ] as const)
    if (result.non2xx > 0 || result.socketErrors > 0)
      throw new Error(
        `${path.label} on ${store}: ${result.non2xx} non-2xx, ${result.socketErrors} socket errors`,
      )
  measured.push({ label: path.label, hello: helloRun, libsql, postgres: onPg })
}

// Three nodes on the one PostgreSQL database, each with its own wrk at once, against the one node alone.
for (let index = 1; index < 3; index++)
  postgresNodes.push(await startMarketServer({ ...bare, DATABASE_URL: postgresUrl }))
const spread = ['GET agent card (cached)', 'POST milestone'].flatMap((label) =>
  paths.filter((path) => path.label === label),
)
type Spread = { label: string; one: WrkResult; three: WrkResult[] }
const spreads: Spread[] = []
for (const path of spread) {
  const one = await drive(postgresBase, path.request(onPostgres))
  const three = await Promise.all(postgresNodes.map((node) => drive(node.base, path.request(onPostgres))))
  spreads.push({ label: path.label, one, three })
}

for (const node of [libsqlNode, ...postgresNodes]) node.stop()
hello.kill()
await Promise.all([...[libsqlNode, ...postgresNodes].map((node) => node.process.exited), hello.exited])
await postgres.stop()
rmSync(folder, { recursive: true, force: true })

const rate = (result: WrkResult) => formatCount(result.requestsPerSecond)
const ratio = (a: WrkResult, b: WrkResult) => (a.requestsPerSecond / b.requestsPerSecond).toFixed(3)
const total = (results: WrkResult[]) => results.reduce((sum, result) => sum + result.requestsPerSecond, 0)
const markdown = `## PostgreSQL and three nodes

The market of "HTTP under load" (${formatCount(SIZE.agents)} agents, ${formatCount(SIZE.tasks)} tasks, moved to
PostgreSQL by \`agentmarket copy\`) served by \`bun start\` bare on a libSQL file and on PostgreSQL
(Debian's PostgreSQL 15, default settings, fsync on, on this machine), \`wrk -t1 -c32 -d${seconds}s\` after a 1 s
warm-up, each path beside an Elysia hello world measured just before it (ratio in brackets). wrk, the nodes and
PostgreSQL share the machine's 2 cores.

${table(
  ['path', 'libSQL req/s', 'PostgreSQL req/s', 'PostgreSQL p50', 'PostgreSQL p99', 'PostgreSQL / libSQL'],
  measured.map(({ label, hello, libsql, postgres: pg }) => [
    label,
    `${rate(libsql)} (${ratio(libsql, hello)})`,
    `${rate(pg)} (${ratio(pg, hello)})`,
    formatMs(pg.p50Ms),
    formatMs(pg.p99Ms),
    ratio(pg, libsql),
  ]),
)}

Three nodes on one PostgreSQL, each driven by its own wrk (32 connections) at once, against one node alone:

${table(
  ['path', 'one node req/s', 'three nodes req/s (each)', 'three nodes in all', 'three / one'],
  spreads.map(({ label, one, three }) => [
    label,
    rate(one),
    three.map(rate).join(' + '),
    formatCount(total(three)),
    (total(three) / one.requestsPerSecond).toFixed(2),
  ]),
)}

On one machine of 2 cores three nodes cannot add CPU, only contention: this run shows the shared paths' cost (LISTEN
notices, leased rate limits, the feed sequencer) with more processes, not the gain of more machines.
`

finishSection({ title: 'PostgreSQL and three nodes', markdown, goals: [] }, json)
