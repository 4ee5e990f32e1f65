/**
 * A/B: the same reads against two checkouts' servers on copies of one seeded market, measured in turn (A, B, A, B …)
 * so the machine's drift hits both alike; prints the median req/s of each side per read.
 * Usage: bun bench/ab.ts <checkout A> <checkout B> [rounds=5] [seconds=3]
 */
import { copyFileSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, waitForOk } from '../tests/support/process.ts'
import { SEARCH_WORD, seededAgent, seededTask, seedMarket } from './lib/seed.ts'
import { runWrk } from './lib/wrk.ts'

const [a = '', b = '', roundsArg = '5', secondsArg = '3'] = process.argv.slice(2)
const rounds = Number(roundsArg)
const seconds = Number(secondsArg)
const size = { agents: 1_000, tasks: 10_000 }
const READS: Record<string, string> = {
  'agent list (first page)': '/api/community/agents?limit=20',
  [`search q=${SEARCH_WORD}`]: `/api/community/agents?q=${SEARCH_WORD}&limit=20`,
  'agent record': `/api/community/agents/${seededAgent(500)}`,
  'agent card': `/api/agents/${seededAgent(500)}/agent-card.json`,
  'OpenAPI document': '/api/openapi.json',
  'paid offers page': '/api/paid-offers?limit=100',
  'task by id': `/api/agents/${seededAgent(5_000 % size.agents)}/tasks/${seededTask(5_000)}`,
  'live feed page': '/api/feed/live',
}

/** Starts the server of `checkout` on its own copy of the market. */
async function serve(checkout: string, seeded: string) {
  const file = join(mkdtempSync(join(tmpdir(), 'agentmarket-ab-')), 'market.db')
  copyFileSync(seeded, file)
  const port = freePort()
  const child = Bun.spawn(['bun', 'packages/server/src/main.ts'], {
    cwd: checkout,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      PORT: String(port),
      HOST: '127.0.0.1',
      RATE_LIMITS: 'off',
      DATABASE_URL: `file:${file}`,
      NODE_ENV: 'production',
      CHAIN_RPC_URL: 'http://127.0.0.1:9',
    },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  const base = `http://127.0.0.1:${port}`
  await waitForOk(`${base}/api/community/health`, child)
  return { base, stop: () => child.kill() }
}

const seeded = join(mkdtempSync(join(tmpdir(), 'agentmarket-ab-seed-')), 'market.db')
await seedMarket(seeded, size)
const servers = [await serve(a, seeded), await serve(b, seeded)]
const figures: Record<string, number[][]> = {}
try {
  for (const [label, path] of Object.entries(READS))
    for (const server of servers) await runWrk({ url: `${server.base}${path}`, seconds: 1 })
  for (let round = 0; round < rounds; round++)
    for (const [label, path] of Object.entries(READS)) {
      figures[label] ??= [[], []]
      for (const [side, server] of servers.entries())
        figures[label]?.[side]?.push(
          (await runWrk({ url: `${server.base}${path}`, seconds })).requestsPerSecond,
        )
    }
} finally {
  for (const server of servers) server.stop()
}
const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)] ?? 0
console.log(`| read | A req/s (median of ${rounds}) | B req/s | B/A |`)
console.log('| --- | --- | --- | --- |')
for (const [label, [left = [], right = []]] of Object.entries(figures)) {
  const [x, y] = [median(left), median(right)]
  console.log(
    `| ${label} | ${Math.round(x).toLocaleString('en')} | ${Math.round(y).toLocaleString('en')} | ${(y / x).toFixed(2)} |`,
  )
}
