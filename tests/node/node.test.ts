import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { toHex } from 'viem'
import { type Anvil, startAnvil } from '../support/anvil.ts'
import { ensurePackagesBuilt } from '../support/examples.ts'
import { type MigratedPostgres, startMigratedPostgres } from '../support/postgres.ts'
import { runToEnd } from '../support/process.ts'

const root = resolve(import.meta.dir, '../..')
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-node-'))
let anvil: Anvil
let pg: MigratedPostgres
// Each step starts processes (a build, anvil, PostgreSQL, node) and waits on their answers: a verdict is what they
// printed and how they exited, and this bound only ends a hang. It is wide on purpose: at a load average of 6-13 the
// suite's default (30 s, package.json) failed a test that takes 8 s alone, and the PostgreSQL conformance run, about
// a minute alone, passed 300 s at a load average of 12 (issue 39).
const HANG_BOUND_MS = 900_000

/** Runs `args` with the real `node` (not Bun) from the repository root. */
const node = (args: string[], env: Record<string, string> = {}) =>
  runToEnd(['node', ...args], { cwd: root, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env } })

beforeAll(async () => {
  await ensurePackagesBuilt()
  anvil = await startAnvil()
  await anvil.installUsdc()
  pg = await startMigratedPostgres()
}, HANG_BOUND_MS)

afterAll(async () => {
  anvil?.stop()
  await pg?.stop()
  rmSync(folder, { recursive: true, force: true })
  // Stopping PostgreSQL after three stores' suites waits for its last connections: a wide bound, not a speed test.
}, HANG_BOUND_MS)

describe('the built packages under Node.js', () => {
  test(
    'behavior: node is Node.js 20 or newer',
    async () => {
      const { stdout } = await node(['--version'])
      expect(Number(stdout.trim().replace(/^v/, '').split('.')[0])).toBeGreaterThanOrEqual(20)
    },
    HANG_BOUND_MS,
  )

  test(
    'behavior: a host on node registers, heartbeats and verifies a real USDC payment with the libSQL store',
    async () => {
      const [, buyer, seller] = anvil.accounts
      if (!buyer || !seller) throw new Error('missing anvil accounts')
      await anvil.mintUsdc(buyer.address, 10_000_000n)
      const txHash = await anvil.transferUsdc(buyer, seller.address, 2_500_000n)
      await anvil.mine(2)
      const run = await node(['tests/node/embed.mjs'], {
        RPC_URL: anvil.rpcUrl,
        TX_HASH: txHash,
        SELLER_WALLET: seller.address,
        PAYER_KEY: toHex(buyer.getHdKey().privateKey ?? new Uint8Array()),
        DATABASE_URL: `file:${join(folder, 'node.db')}`,
      })
      expect(run.stderr).toBe('')
      expect(run.exitCode).toBe(0)
      const result = JSON.parse(run.stdout)
      expect(result).toEqual({
        node: expect.stringMatching(/^\d+\./),
        bun: false,
        heartbeat: 'live',
        order: { status: 201, taskStatus: 'pending_payment' },
        verified: 200,
        task: { status: 'paid', txHash },
        refusal: { name: 'InvalidInputError', status: 400 },
      })
    },
    HANG_BOUND_MS,
  )

  test(
    'behavior: memoryStore, the libSQL store and the PostgreSQL store pass the store conformance suite under node --test',
    async () => {
      const run = await node(['--test', '--test-reporter=tap', 'tests/node/conformance.mjs'], {
        POSTGRES_ADMIN_URL: pg.adminUrl,
        POSTGRES_TEMPLATE: pg.template,
      })
      expect(run.stdout).toMatch(/^# fail 0$/m)
      // 55 cases for each of the three stores.
      expect(Number(run.stdout.match(/^# pass (\d+)$/m)?.[1])).toBeGreaterThanOrEqual(165)
      expect(run.exitCode).toBe(0)
    },
    HANG_BOUND_MS,
  )
})
