import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { Hex } from 'viem'
import { type PaymentChain, paymentChain } from '../../../../tests/support/anvil.ts'
import { runToEnd } from '../../../../tests/support/process.ts'
import type { VerifyReport } from './verifyReport.ts'

const entry = resolve(import.meta.dir, '../main.ts')
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-bench-'))
let local: PaymentChain<'buyer' | 'seller'>

beforeAll(async () => {
  local = await paymentChain(['buyer', 'seller'], { funded: ['buyer'] })
})
afterAll(() => {
  local?.anvil.stop()
  rmSync(folder, { recursive: true, force: true })
})

/** Runs `agentmarket bench verify …` from source, as a user would, with only PATH and `env` set. */
function benchVerify(words: string[], env: Record<string, string> = {}) {
  return runToEnd(['bun', entry, 'bench', 'verify', ...words], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
  })
}

/** The one JSON object a --json run printed. */
function reportOf(stdout: string): VerifyReport {
  const lines = stdout.trim().split('\n')
  expect(lines).toHaveLength(1)
  return JSON.parse(lines[0] ?? '') as VerifyReport
}

describe('runVerifyBench', () => {
  test('behavior: --generate makes real transfers on its own anvil and every one verifies ok, batched in about one call each', async () => {
    const { exitCode, stdout, stderr } = await benchVerify(['--generate', '50', '--json', '--runs', '1'])
    expect(exitCode, stderr).toBe(0)
    const report = reportOf(stdout)
    expect(report).toMatchObject({
      source: 'generated',
      payments: 50,
      runs: 1,
      chainId: 8453,
      minConfirmations: 3,
    })
    expect(report.batched.verdicts).toEqual({ ok: 50 })
    expect(report.naive.verdicts).toEqual({ ok: 50 })
    // One head read and one receipt each: 51 calls for 50 payments, in one HTTP request.
    expect(report.batched.rpcCallsPerVerification).toBeLessThanOrEqual(1.1)
    expect(report.batched.httpRequestsPerRun).toBe(1)
    expect(report.naive.rpcCallsPerVerification).toBeGreaterThanOrEqual(1)
    expect(report.naive.httpRequestsPerRun).toBe(50)
    for (const mode of [report.batched, report.naive]) {
      expect(mode.verificationsPerSecond).toBeGreaterThan(0)
      expect(mode.latencyMs.p99).toBeGreaterThanOrEqual(mode.latencyMs.p50)
    }
    expect(report.batched.latencyOf).toBe('batch')
    expect(report.naive.latencyOf).toBe('verification')
    // The run's raw JSON-RPC floor: the batched mode's 51 reads in one request, and each mode's ratio to it.
    expect(report.floor).toMatchObject({ httpRequestsPerRun: 1, batchSize: 1_000 })
    expect(report.floor.verificationsPerSecond).toBeGreaterThan(0)
    for (const mode of [report.batched, report.naive]) expect(mode.floorRatio).toBeGreaterThan(0)
  })

  test('behavior: a hashes file mixing transfers with other transactions reports each by the verifier’s reason', async () => {
    const { anvil, accounts } = local
    const { buyer, seller } = accounts
    const paid = [
      await anvil.transferUsdc(buyer, seller.address, 1_500_000n),
      await anvil.transferUsdc(buyer, anvil.accounts[5]?.address ?? seller.address, 20_000n),
      await anvil.transferUsdc(buyer, seller.address, 7n),
    ]
    const reverted = await anvil.sendRevertingTransfer(seller, buyer.address, 10n ** 18n)
    const ether = await anvil.walletFor(buyer).sendTransaction({ to: seller.address, value: 1n })
    await anvil.publicClient.waitForTransactionReceipt({ hash: ether })
    await anvil.mine(3)
    const unknown: Hex = `0x${'ab'.repeat(32)}`
    const file = join(folder, 'hashes.txt')
    writeFileSync(file, `${[...paid, reverted, '', ether, unknown].join('\n')}\n`)

    const { exitCode, stdout, stderr } = await benchVerify(['--hashes', file, '--json', '--runs', '1'], {
      CHAIN_RPC_URL: anvil.rpcUrl,
    })
    expect(exitCode, stderr).toBe(0)
    const report = reportOf(stdout)
    const expected = { ok: 3, reverted: 1, wrong_token: 1, pending: 1 }
    expect(report).toMatchObject({ source: 'hashes', payments: 6, runs: 1 })
    expect(report.batched.verdicts).toEqual(expected)
    expect(report.naive.verdicts).toEqual(expected)
    expect(report.rpcHost).toBe(new URL(anvil.rpcUrl).host)
  })

  test('behavior: --generate with --rpc uses that anvil, and the table names every figure', async () => {
    const { exitCode, stdout, stderr } = await benchVerify(['--generate', '20', '--rpc', local.anvil.rpcUrl])
    expect(exitCode, stderr).toBe(0)
    expect(stdout).toContain(
      `20 payments generated on anvil, chain 8453 at ${new URL(local.anvil.rpcUrl).host}`,
    )
    for (const row of [
      'verifications/s',
      'ratio to the raw floor',
      'latency p50',
      'latency p99',
      'JSON-RPC calls/verification',
    ])
      expect(stdout).toMatch(new RegExp(`${row.replace('/', '\\/')}\\s+\\S+\\s+\\S+`))
    expect(stdout).toMatch(/verdict ok\s+20\s+20/)
    expect(stdout).toMatch(/raw JSON-RPC floor: [\d,]+ payments\/s/)
    expect(stderr).toContain('bench verify: run 3 of 3')
  })

  test('error: a missing input is one line and exit 2; the wrong chain is one line and exit 1', async () => {
    const rpc = { CHAIN_RPC_URL: local.anvil.rpcUrl }
    const one = join(folder, 'one.txt')
    writeFileSync(one, `0x${'cd'.repeat(32)}\n`)
    const cases: [string[], Record<string, string>, number, RegExp][] = [
      [['--hashes', join(folder, 'none.txt')], {}, 2, /needs the chain: set CHAIN_RPC_URL or pass --rpc URL/],
      [['--hashes', join(folder, 'none.txt')], rpc, 2, /cannot read the hashes file .*none\.txt \(ENOENT\)/],
      [['--hashes', one], { ...rpc, CHAIN_ID: '1' }, 1, /is chain 8453, not CHAIN_ID 1/],
    ]
    for (const [words, env, code, message] of cases) {
      const { exitCode, stdout, stderr } = await benchVerify(words, env)
      expect(exitCode, stderr).toBe(code)
      expect(stdout).toBe('')
      expect(stderr).toMatch(new RegExp(`^agentmarket: .*${message.source}`))
      expect(stderr.trim().split('\n')).toHaveLength(1)
    }
  })
})
