/**
 * User CPU per write through the marketplace's action alone (no HTTP, no Elysia): one checkout's `Marketplace` over a
 * copy of a market `bench/readCpu.ts` prepared (its folder keeps `market.db` and `prepare.json`, the seller's key),
 * 32 writes at a time as wrk's connections send them, 3,200 to warm up, then the median of 5 batches of 3,200. Run
 * it for two checkouts in turns (A, B, A, B …): a write's CPU below the HTTP layer, steadier than req/s on a shared
 * machine.
 * Usage: bun bench/writeActionCpu.ts <checkout> <readCpu folder> [put|milestone|order]
 */
import { copyFileSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CONCURRENCY, cpuMicrosPer, warmedBatches } from './lib/cpu.ts'

const [checkout = '', prepared = '', kind = 'put'] = process.argv.slice(2)
const SELLER = 'bench-seller'
const BATCH = 3_200
const [, key] = JSON.parse(await Bun.file(join(prepared, 'prepare.json')).text()) as [string, string]
const file = join(mkdtempSync(join(tmpdir(), 'agentmarket-writecpu-')), 'market.db')
copyFileSync(join(prepared, 'market.db'), file)
const { openMarketDatabase } = await import(`${checkout}/packages/server/src/database.ts`)
const { marketConfig, readSettings } = await import(`${checkout}/packages/server/src/env.ts`)
const { Marketplace } = await import(`${checkout}/packages/core/src/index.ts`)
const settings = readSettings({
  DATABASE_URL: `file:${file}`,
  NODE_ENV: 'production',
  CHAIN_RPC_URL: 'http://127.0.0.1:9',
  LOG_LEVEL: 'off',
  RATE_LIMITS: 'off',
})
const database = await openMarketDatabase(settings)
const market = Marketplace.create({
  store: database.store,
  config: marketConfig(settings),
  chain: null,
  mpp: null,
  x402: null,
  cardSigner: null,
  pairingSecret: settings.pairingSecret,
})
let sent = 0
const writes: Record<string, () => Promise<unknown>> = {
  put: () => market.updateAgent(SELLER, key, { bio: `load ${++sent}` }),
  milestone: () => market.recordMilestone(SELLER, key, { date: '2026-11-01', title: 'load' }),
  order: () => market.createTask(SELLER, { skill: 'echo', params: { q: 1 } }, {}),
}
const chosen = writes[kind]
if (!chosen) throw new Error('usage: bun bench/writeActionCpu.ts <checkout> <folder> [put|milestone|order]')
const write: () => Promise<unknown> = chosen

/** User CPU µs per write of `count` writes, `CONCURRENCY` at a time. */
const userMicros = (count: number) =>
  cpuMicrosPer(count, () => Promise.all(Array.from({ length: CONCURRENCY }, write)), true)
const figures = await warmedBatches(() => userMicros(BATCH))
figures.sort((a, b) => a - b)
console.log(
  `${kind} ${checkout}: user CPU µs per write ${figures.map((f) => f.toFixed(0)).join(' ')}, median ${figures[2]?.toFixed(1)}`,
)
process.exit(0)
