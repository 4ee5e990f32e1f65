/**
 * HTTP under load: wrk (1 thread, 32 connections, loopback only, bounded runs) against the server started as a user
 * starts it (`bun start`, production mode, a file database seeded with 1,000 agents and 10,000 tasks), each
 * endpoint set against an Elysia hello-world route measured in the same run. After the write runs, every write wrk
 * saw acknowledged is looked up in the database.
 * Usage: bun bench/http.ts [--quick] [--json PATH]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { freePort, startMarketServer, waitForOk } from '../tests/support/process.ts'
import { finishSection, formatCount, formatMs, type Goal, sectionFlags, table } from './lib/section.ts'
import { SEARCH_WORD, seedMarket } from './lib/seed.ts'
import { runWrk, type WrkOptions, type WrkResult } from './lib/wrk.ts'

const { quick, json } = sectionFlags()
const seconds = quick ? 1 : 10
const root = resolve(import.meta.dir, '..')
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-bench-http-'))
const database = join(folder, 'market.db')
const SIZE = { agents: 1_000, tasks: 10_000 }

await seedMarket(database, SIZE)

// The baseline: hello-world on the same Bun.
const helloPort = freePort()
const hello = Bun.spawn(['bun', 'bench/hello.ts'], {
  cwd: root,
  env: { PATH: process.env.PATH ?? '', PORT: String(helloPort), NODE_ENV: 'production' },
  stdout: 'ignore',
  stderr: 'inherit',
})
await waitForOk(`http://127.0.0.1:${helloPort}/`, hello)

const server = await startMarketServer({
  DATABASE_URL: `file:${database}`,
  NODE_ENV: 'production',
  CHAIN_RPC_URL: 'http://127.0.0.1:9',
  LOG_LEVEL: 'off',
})
const base = server.base
// The same database behind a second process as shipped: rate limits on (raised so wrk, one address, is never
// refused) and a log line per request. The rows "as shipped" show what the two cost a request.
const shipped = await startMarketServer({
  DATABASE_URL: `file:${database}`,
  NODE_ENV: 'production',
  CHAIN_RPC_URL: 'http://127.0.0.1:9',
  RATE_LIMITS: 'on',
  RATE_LIMIT_POLICIES: 'read=9999999/60,write=9999999/60',
  LOG_LEVEL: 'info',
})

/** JSON over HTTP to the market server; throws unless the status is `expected`. */
async function call(method: string, path: string, body?: unknown, key?: string, expected = 200) {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (key) headers.authorization = `Bearer ${key}`
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  if (response.status !== expected)
    throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`)
  return response.json() as Promise<Record<string, unknown>>
}

const skills = ['ping', { name: 'Deep Research', type: 'purchasable', price: 0.5, sla: '24 hours' }]
const bench = await call('POST', '/api/agents/register', {
  name: 'bench-seller',
  bio: 'Benchmarks things',
  skills,
})
const key = String(bench.apiKey)
await call(
  'PUT',
  '/api/agents/bench-seller',
  { walletAddress: '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed' },
  key,
)
for (let index = 0; index < 5; index++)
  await call(
    'POST',
    '/api/agents/bench-seller/milestones',
    { date: '2026-10-01', title: `m${index}` },
    key,
    201,
  )
const task = await call(
  'POST',
  '/api/agents/bench-seller/tasks',
  { skill: 'ping', params: { q: 1 } },
  undefined,
  201,
)

type Endpoint = { label: string; options: Omit<WrkOptions, 'seconds'>; goal?: number; write?: boolean }
const endpoints: Endpoint[] = [
  { label: 'GET agent card', options: { url: `${base}/api/agents/bench-seller/agent-card.json` }, goal: 0.5 },
  // Right after its counterpart, so both meet the database (and its write-ahead log) in the same state.
  {
    label: 'GET agent card, as shipped',
    options: { url: `${shipped.base}/api/agents/bench-seller/agent-card.json` },
  },
  {
    label: `GET agent list, q=${SEARCH_WORD}`,
    options: { url: `${base}/api/community/agents?q=${SEARCH_WORD}&limit=20` },
    goal: 0.25,
  },
  { label: 'GET task', options: { url: `${base}/api/agents/bench-seller/tasks/${task.task_id}` } },
  {
    label: 'POST heartbeat',
    options: { url: `${base}/api/agents/bench-seller/heartbeat`, method: 'POST', bearerKey: key },
    goal: 0.2,
    write: true,
  },
  {
    label: 'POST heartbeat, as shipped',
    options: { url: `${shipped.base}/api/agents/bench-seller/heartbeat`, method: 'POST', bearerKey: key },
    write: true,
  },
  {
    label: 'POST register',
    options: {
      url: `${base}/api/agents/register`,
      method: 'POST',
      body: '{"name":"%d","bio":"load","skills":["ping"]}',
      uniquePrefix: `w${Date.now().toString(36)}`,
    },
    goal: 0.05,
    write: true,
  },
  {
    label: 'POST milestone',
    options: {
      url: `${base}/api/agents/bench-seller/milestones`,
      method: 'POST',
      body: '{"date":"2026-11-01","title":"load"}',
      bearerKey: key,
    },
    write: true,
  },
]

// Each endpoint is paired with a hello-world run just before it, so both see the machine in the same state.
const measured: { endpoint: Endpoint; result: WrkResult; hello: WrkResult }[] = []
for (const endpoint of endpoints) {
  await runWrk({ ...endpoint.options, seconds: 1 }) // warm-up: JIT, caches, the first WAL growth
  const helloRun = await runWrk({ url: `http://127.0.0.1:${helloPort}/`, seconds })
  measured.push({ endpoint, hello: helloRun, result: await runWrk({ ...endpoint.options, seconds }) })
}
const helloRates = measured.map(({ hello }) => hello.requestsPerSecond).sort((a, b) => a - b)
const helloResult = measured[Math.floor(measured.length / 2)]?.hello as WrkResult

// Every acknowledged write must be in the database (wrk may also count a few in flight as unfinished).
const acknowledged = (label: string) => {
  const found = measured.find(({ endpoint }) => endpoint.label === label)?.result
  return found ? found.requests - found.non2xx : 0
}
const agentsTotal = Number((await call('GET', '/api/community/agents?limit=1')).total)
const registered = acknowledged('POST register')
const milestonesKept = ((await call('GET', '/api/agents/bench-seller/milestones')).milestones as unknown[])
  .length
const milestonesAcked = acknowledged('POST milestone')
const durable = agentsTotal >= SIZE.agents + 1 + registered && milestonesKept >= 5 + milestonesAcked
server.stop()
shipped.stop()
hello.kill()
await Promise.all([server.process.exited, shipped.process.exited, hello.exited])
rmSync(folder, { recursive: true, force: true })

const rows = [
  [
    `Elysia hello world (baseline; ${formatCount(helloRates[0] ?? 0)}–${formatCount(helloRates.at(-1) ?? 0)} over the ${measured.length} runs)`,
    formatCount(helloResult.requestsPerSecond),
    formatMs(helloResult.p50Ms),
    formatMs(helloResult.p99Ms),
    '1.00',
    '—',
    helloResult.non2xx,
  ],
  ...measured.map(({ endpoint, result, hello }) => [
    endpoint.label,
    formatCount(result.requestsPerSecond),
    formatMs(result.p50Ms),
    formatMs(result.p99Ms),
    (result.requestsPerSecond / hello.requestsPerSecond).toFixed(3),
    endpoint.goal === undefined ? '—' : `>= ${endpoint.goal}`,
    result.non2xx,
  ]),
]
const goals: Goal[] = measured
  .filter(({ endpoint }) => endpoint.goal !== undefined)
  .map(({ endpoint, result, hello }) => {
    const ratio = result.requestsPerSecond / hello.requestsPerSecond
    return {
      name: `${endpoint.label}: ratio to hello world`,
      value: ratio.toFixed(3),
      target: `>= ${endpoint.goal}`,
      met: ratio >= (endpoint.goal ?? 0),
    }
  })
goals.push({
  name: 'every acknowledged write found in the database',
  value: durable ? 'yes' : 'no',
  target: 'yes',
  met: durable,
})

const markdown = `## HTTP under load

\`wrk -t1 -c32 -d${seconds}s --latency\` on 127.0.0.1 against \`bun start\` (production mode, a file database seeded
with ${formatCount(SIZE.agents)} agents and ${formatCount(SIZE.tasks)} tasks), each endpoint after a 1 s warm-up, and against an Elysia
hello-world route in its own process, run just before each endpoint: each ratio is to its own paired hello-world run. wrk and the server share the machine's cores.
The server runs without rate limits (wrk is one address) and without request logs (\`LOG_LEVEL=off\`), except in the
rows "as shipped": a second \`bun start\` on the same database with the defaults, \`RATE_LIMITS=on\` (limits raised so
nothing is refused) and \`LOG_LEVEL=info\` (a JSON line per request, to /dev/null), to show what the two cost.
Writes: ${formatCount(registered)} registrations and ${formatCount(milestonesAcked)} milestones were acknowledged; the database then held
${formatCount(agentsTotal)} agents and ${formatCount(milestonesKept)} milestones of the bench agent (${durable ? 'every acknowledged write present' : 'SOME ACKNOWLEDGED WRITES MISSING'}).

${table(['endpoint', 'req/s', 'p50', 'p99', 'ratio to hello', 'goal', 'non-2xx'], rows)}
`
finishSection({ title: 'HTTP under load', markdown, goals }, json)
