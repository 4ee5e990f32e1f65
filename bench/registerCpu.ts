/**
 * CPU per registration through two checkouts' libSQL stores in turn (A, B, A, B …): 3,000 registrations on a file
 * (bun:sqlite, 32 per group commit, after 320 to warm up), `process.cpuUsage` per registration, the store's JavaScript
 * included. Each checkout needs its dependencies installed (bench/CHANGES.md, issue 41).
 * Usage: bun bench/registerCpu.ts <checkout A> <checkout B> [rounds=4] [registrations=3000]
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const [checkoutA = '', checkoutB = '', roundsArg = '4', countArg = '4000'] = process.argv.slice(2)
const rounds = Number(roundsArg)
const count = Number(countArg)
async function once(checkout: string, round: number) {
  const { openDatabase, libsqlStore } = await import(`${checkout}/packages/store-libsql/src/index.ts`)
  const { sampleAgent } = await import(`${checkout}/packages/core/src/testing/index.ts`)
  const file = join(mkdtempSync(join(tmpdir(), 'regcpu-')), 'market.db')
  const store = libsqlStore(await openDatabase(`file:${file}`))
  const agents = Array.from({ length: count + 320 }, (_, index) =>
    sampleAgent({
      name: `r${round}-${index}`,
      apiKeyHash: crypto.randomUUID(),
      pairingCodeHash: crypto.randomUUID(),
      bio: `agent number ${index} does maps`,
    }),
  )
  // Warm-up: statements prepared, pages cached.
  for (let index = 0; index < 320; index += 32)
    await Promise.all(agents.slice(index, index + 32).map((agent) => store.insertAgent(agent, [])))
  const cpu = process.cpuUsage()
  const started = performance.now()
  for (let index = 320; index < agents.length; index += 32)
    await Promise.all(agents.slice(index, index + 32).map((agent) => store.insertAgent(agent, [])))
  const used = process.cpuUsage(cpu)
  const wall = performance.now() - started
  await store.close()
  return { cpuUs: (used.user + used.system) / count, wallUs: (wall * 1000) / count }
}
const results: Record<string, { cpuUs: number; wallUs: number }[]> = { A: [], B: [] }
for (let round = 0; round < rounds; round++) {
  results.A?.push(await once(checkoutA, round))
  results.B?.push(await once(checkoutB, round))
}
const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)] ?? 0
for (const side of ['A', 'B']) {
  const rows = results[side] ?? []
  console.log(
    side,
    'CPU µs/registration',
    rows.map((r) => r.cpuUs.toFixed(0)).join(' '),
    'median',
    median(rows.map((r) => r.cpuUs)).toFixed(0),
    '| wall µs',
    median(rows.map((r) => r.wallUs)).toFixed(0),
  )
}
