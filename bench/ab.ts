/**
 * A/B: the same reads against two checkouts' servers on copies of one seeded market, measured in turn (A, B, A, B …)
 * so the machine's drift hits both alike; prints the median req/s of each side per read, and the median CPU each
 * server spent per request (user + system from /proc, all threads): on a shared machine, CPU per request moves far less
 * with the load than requests per second do.
 * Refusals (the 402 challenge of a paid order without a credential, the same order for an unknown agent) must be
 * refused every time.
 * Usage: bun bench/ab.ts <checkout A> <checkout B> [rounds=5] [seconds=3] [reads: words of their labels, comma-separated]
 * Settings instead of code: the same checkout twice, with AB_ENV_A / AB_ENV_B giving each side's variables
 * (`NAME=value;NAME=value`), e.g. AB_ENV_A='LOG_LEVEL=off' for the request log's cost (the server logs at info by default),
 * or `bare` / `shipped` for bench/lib/modes.ts's settings (AB_ENV_A=bare AB_ENV_B=shipped: what the shipped features cost).
 */
import { copyFileSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startMarketServer } from '../tests/support/process.ts'
import { BARE_SETTINGS, SHIPPED_SETTINGS } from './lib/modes.ts'
import { cpuMs } from './lib/proc.ts'
import { SEARCH_WORD, seededAgent, seededTask, seedMarket } from './lib/seed.ts'
import { runWrk } from './lib/wrk.ts'

const [a = '', b = '', roundsArg = '5', secondsArg = '3', only = ''] = process.argv.slice(2)
const rounds = Number(roundsArg)
const seconds = Number(secondsArg)
const size = { agents: 1_000, tasks: 10_000 }
/**
 * One request kind: its path, and for writes its method, body (`%d` made unique per request) and whether it needs a
 * key; `refused` for a kind every answer of which is a refusal (a 402 challenge, a 404).
 */
type Kind = { path: string; method?: string; body?: string; keyed?: boolean; refused?: boolean }

const ALL_READS: Record<string, Kind> = {
  'agent list (first page)': { path: '/api/community/agents?limit=20' },
  [`search q=${SEARCH_WORD}`]: { path: `/api/community/agents?q=${SEARCH_WORD}&limit=20` },
  'agent record': { path: `/api/community/agents/${seededAgent(500)}` },
  'agent card': { path: `/api/agents/${seededAgent(500)}/agent-card.json` },
  'OpenAPI document': { path: '/api/openapi.json' },
  'paid offers page': { path: '/api/paid-offers?limit=100' },
  'task by id': { path: `/api/agents/${seededAgent(5_000 % size.agents)}/tasks/${seededTask(5_000)}` },
  'live feed page': { path: '/api/feed/live' },
  'POST heartbeat': { path: '/api/agents/ab-seller/heartbeat', method: 'POST', keyed: true },
  'POST register': { path: '/api/agents/register', method: 'POST', body: '{"name":"r-%d"}' },
  'POST milestone': {
    path: '/api/agents/ab-seller/milestones',
    method: 'POST',
    body: '{"date":"2026-11-01","title":"m%d"}',
    keyed: true,
  },
  'GET milestones': { path: '/api/agents/ab-seller/milestones' },
  'PUT agent bio': { path: '/api/agents/ab-seller', method: 'PUT', body: '{"bio":"b%d"}', keyed: true },
  'POST order (free skill)': {
    path: '/api/agents/ab-seller/tasks',
    method: 'POST',
    body: '{"skill":"echo"}',
  },
  'POST 402 challenge (paid skill, no credential)': {
    path: '/api/agents/ab-seller/tasks/deep-research',
    method: 'POST',
    body: '{"params":{"q":"%d"}}',
    refused: true,
  },
  'POST 404 (the same order, unknown agent)': {
    path: '/api/agents/ab-nobody/tasks/deep-research',
    method: 'POST',
    body: '{"params":{"q":"%d"}}',
    refused: true,
  },
}

const READS = Object.fromEntries(
  Object.entries(ALL_READS).filter(
    ([label]) => !only || only.split(',').some((word) => label.includes(word)),
  ),
)

/** `NAME=value;NAME=value` as variables (a value may hold `=`); `shipped` or `bare` as bench/lib/modes.ts sets them. */
const variables = (text = ''): Record<string, string> =>
  text === 'shipped'
    ? { ...SHIPPED_SETTINGS }
    : text === 'bare'
      ? { ...BARE_SETTINGS }
      : Object.fromEntries(
          text
            .split(';')
            .filter(Boolean)
            .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
        )

/** Starts the server of `checkout` on its own copy of the market, with `env` added to its variables. */
async function serve(checkout: string, seeded: string, env: Record<string, string>) {
  const file = join(mkdtempSync(join(tmpdir(), 'agentmarket-ab-')), 'market.db')
  copyFileSync(seeded, file)
  const server = await startMarketServer(
    { DATABASE_URL: `file:${file}`, NODE_ENV: 'production', CHAIN_RPC_URL: 'http://127.0.0.1:9', ...env },
    { cwd: checkout },
  )
  const { base } = server
  const registered = await fetch(`${base}/api/agents/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'ab-seller',
      skills: ['Echo', { name: 'Deep Research', type: 'purchasable', price: 0.5, sla: '24 hours' }],
    }),
  })
  const { apiKey } = (await registered.json()) as { apiKey: string }
  // A wallet, so its paid skill is ordered with a 402 challenge.
  await fetch(`${base}/api/agents/ab-seller`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ walletAddress: '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed' }),
  })
  return { base, apiKey, pid: server.process.pid, stop: server.stop }
}

const seeded = join(mkdtempSync(join(tmpdir(), 'agentmarket-ab-seed-')), 'market.db')
await seedMarket(seeded, size)
const servers = [
  await serve(a, seeded, variables(process.env.AB_ENV_A)),
  await serve(b, seeded, variables(process.env.AB_ENV_B)),
]
const figures: Record<string, number[][]> = {}
const cpuFigures: Record<string, number[][]> = {}
/**
 * One wrk run of `kind` against `server`: its requests per second and the server's CPU µs per request; any answer
 * that is not 2xx stops the run.
 */
async function measure(server: (typeof servers)[number], kind: Kind, runSeconds: number) {
  const cpuBefore = cpuMs(server.pid)
  const { requestsPerSecond, requests, non2xx } = await runWrk({
    url: `${server.base}${kind.path}`,
    seconds: runSeconds,
    method: kind.method,
    body: kind.body,
    bearerKey: kind.keyed ? server.apiKey : undefined,
    uniquePrefix: kind.body?.includes('%d') ? 'ab' : undefined,
  })
  if (kind.refused ? non2xx !== requests : non2xx > 0)
    throw new Error(`${kind.path}: ${non2xx} of ${requests} answers were not 2xx`)
  return { requestsPerSecond, cpuUs: ((cpuMs(server.pid) - cpuBefore) * 1000) / Math.max(1, requests) }
}

try {
  for (const kind of Object.values(READS)) for (const server of servers) await measure(server, kind, 1)
  for (let round = 0; round < rounds; round++)
    for (const [label, kind] of Object.entries(READS)) {
      figures[label] ??= [[], []]
      cpuFigures[label] ??= [[], []]
      for (const [side, server] of servers.entries()) {
        const { requestsPerSecond, cpuUs } = await measure(server, kind, seconds)
        figures[label]?.[side]?.push(requestsPerSecond)
        cpuFigures[label]?.[side]?.push(cpuUs)
      }
    }
} finally {
  for (const server of servers) server.stop()
}
const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)] ?? 0
console.log(`| request | A req/s (median of ${rounds}) | B req/s | B/A |`)
console.log('| --- | --- | --- | --- |')
for (const [label, [left = [], right = []]] of Object.entries(figures)) {
  const [x, y] = [median(left), median(right)]
  console.log(
    `| ${label} | ${Math.round(x).toLocaleString('en')} | ${Math.round(y).toLocaleString('en')} | ${(y / x).toFixed(2)} |`,
  )
}
console.log(`\n| request | A CPU µs / request (median of ${rounds}) | B CPU µs / request | B/A |`)
console.log('| --- | --- | --- | --- |')
for (const [label, [left = [], right = []]] of Object.entries(cpuFigures)) {
  const [x, y] = [median(left), median(right)]
  console.log(`| ${label} | ${x.toFixed(1)} | ${y.toFixed(1)} | ${(y / x).toFixed(2)} |`)
}
