import { describe, expect, test } from 'bun:test'
import { BASE_USDC } from '@agentmarket/core'
import type { ModeFigures } from './verifyBench.ts'
import { reportJson, reportText, type VerifyReport } from './verifyReport.ts'

const batched: ModeFigures = {
  verificationsPerSecond: 12_345.678,
  latencyOf: 'batch',
  latencyMs: { p50: 162.04567, p99: 170.5 },
  rpcCallsPerVerification: 1.000_499_9,
  httpRequestsPerRun: 2,
  verdicts: { ok: 1_998, pending: 2 },
  floorRatio: 0.861_234,
}
const report: VerifyReport = {
  source: 'hashes',
  chainId: 8453,
  rpcHost: 'rpc.example:8545',
  token: BASE_USDC,
  minConfirmations: 3,
  payments: 2_000,
  runs: 3,
  floor: { verificationsPerSecond: 14_321.6, httpRequestsPerRun: 2, batchSize: 1_000 },
  batched,
  naive: {
    ...batched,
    verificationsPerSecond: 567.4,
    latencyOf: 'verification',
    latencyMs: { p50: 0.8123, p99: 2.4 },
    rpcCallsPerVerification: 2,
    httpRequestsPerRun: 2_000,
    verdicts: { ok: 1_997, pending: 2, reverted: 1 },
    floorRatio: 0.045_67,
  },
}

describe('reportJson', () => {
  test('behavior: one line of JSON with every figure, rounded for reading', () => {
    const text = reportJson(report)
    expect(text).not.toContain('\n')
    expect(JSON.parse(text)).toEqual({
      benchmark: 'verify',
      source: 'hashes',
      chainId: 8453,
      rpcHost: 'rpc.example:8545',
      token: BASE_USDC,
      minConfirmations: 3,
      payments: 2_000,
      runs: 3,
      floor: { verificationsPerSecond: 14_322, httpRequestsPerRun: 2, batchSize: 1_000 },
      batched: {
        ...batched,
        floorRatio: 0.861,
        verificationsPerSecond: 12_346,
        latencyMs: { p50: 162.046, p99: 170.5 },
        rpcCallsPerVerification: 1.0005,
      },
      naive: {
        ...report.naive,
        verificationsPerSecond: 567,
        latencyMs: { p50: 0.812, p99: 2.4 },
        floorRatio: 0.046,
      },
    })
  })
})

describe('reportText', () => {
  test('behavior: a row per figure with both modes aligned, a row per verdict reason, and what latency means', () => {
    const lines = reportText(report).split('\n')
    expect(lines[0]).toBe(
      'agentmarket bench verify: 2,000 payments from the hashes file, chain 8453 at rpc.example:8545',
    )
    const rows = Object.fromEntries(
      lines
        .filter((line) => /\S {3,}\S/.test(line))
        .map((line) => {
          const cells = line.split(/ {3,}/)
          return [cells[0] ?? '', cells.slice(1)]
        }),
    )
    expect(rows).toEqual({
      '': ['batched', 'naive'],
      'verifications/s': ['12,346', '567'],
      'ratio to the raw floor': ['0.861', '0.046'],
      'latency p50': ['162.0 ms', '812 µs'],
      'latency p99': ['170.5 ms', '2.40 ms'],
      'JSON-RPC calls/verification': ['1.0005', '2.0000'],
      'HTTP requests/run': ['2', '2,000'],
      'verdict ok': ['1,998', '1,997'],
      'verdict pending': ['2', '2'],
      'verdict reverted': ['0', '1'],
    })
    // Aligned: every row's second and third cells start where the header's do.
    const header = lines.find((line) => /^ +batched +naive$/.test(line)) ?? ''
    const starts = [header.indexOf('batched'), header.indexOf('naive')]
    for (const line of lines.filter((line) => /\S {3,}\S/.test(line)))
      for (const start of starts) expect(line.slice(start - 1, start + 1), line).toMatch(/^ \S$/)
    expect(lines.join('\n')).toContain("latency: that call's wall time")
    expect(lines.join('\n')).toContain('latency: each verification')
    expect(lines.join('\n')).toContain('raw JSON-RPC floor: 14,322 payments/s')
  })
})
