import type { Address } from 'viem'
import { formatCount, formatMs } from './format.ts'
import type { ModeFigures, VerificationFigures, VerifyMode } from './verifyBench.ts'

/** The figures with what they were measured on. The RPC's host only: its path or query may hold an API key. */
export type VerifyReport = VerificationFigures & {
  source: 'generated' | 'hashes'
  chainId: number
  rpcHost: string
  token: Address
  minConfirmations: number
}

const MODES: VerifyMode[] = ['batched', 'naive']

/** `value` rounded to `digits` decimals, as a number. */
const rounded = (value: number, digits: number) => Number(value.toFixed(digits))

/** A mode's figures rounded for reading: whole verifications, microseconds, four decimals of calls. */
function roundedFigures(figures: ModeFigures): ModeFigures {
  return {
    ...figures,
    verificationsPerSecond: Math.round(figures.verificationsPerSecond),
    latencyMs: { p50: rounded(figures.latencyMs.p50, 3), p99: rounded(figures.latencyMs.p99, 3) },
    rpcCallsPerVerification: rounded(figures.rpcCallsPerVerification, 4),
    floorRatio: rounded(figures.floorRatio, 3),
  }
}

/** The report as the one JSON object of `--json`. */
export function reportJson(report: VerifyReport): string {
  const { batched, naive, floor, ...about } = report
  return JSON.stringify({
    benchmark: 'verify',
    ...about,
    floor: { ...floor, verificationsPerSecond: Math.round(floor.verificationsPerSecond) },
    batched: roundedFigures(batched),
    naive: roundedFigures(naive),
  })
}

/** Rows of cells as text, each column padded to its widest cell. */
function aligned(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? []
  return rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('   ')
      .trimEnd(),
  )
}

/** The report as the readable table printed by default. */
export function reportText(report: VerifyReport): string {
  const count = formatCount(report.payments)
  const where = report.source === 'generated' ? 'generated on anvil' : 'from the hashes file'
  const row = (label: string, cell: (figures: ModeFigures) => string) => [
    label,
    ...MODES.map((mode) => cell(report[mode])),
  ]
  const runs = report.runs === 1 ? 'one run' : `medians of ${report.runs} runs`
  const reasons = [...new Set(MODES.flatMap((mode) => Object.keys(report[mode].verdicts)))]
  const table = aligned([
    ['', ...MODES],
    row('verifications/s', (figures) => formatCount(figures.verificationsPerSecond)),
    row('ratio to the raw floor', (figures) => figures.floorRatio.toFixed(3)),
    row('latency p50', (figures) => formatMs(figures.latencyMs.p50)),
    row('latency p99', (figures) => formatMs(figures.latencyMs.p99)),
    row('JSON-RPC calls/verification', (figures) => figures.rpcCallsPerVerification.toFixed(4)),
    row('HTTP requests/run', (figures) => formatCount(figures.httpRequestsPerRun)),
    ...reasons.map((reason) =>
      row(`verdict ${reason}`, (figures) => formatCount(figures.verdicts[reason] ?? 0)),
    ),
  ])
  return [
    `agentmarket bench verify: ${count} payments ${where}, chain ${report.chainId} at ${report.rpcHost}`,
    `USDC ${report.token}, ${report.minConfirmations} confirmations; ${runs} after one warm-up`,
    '',
    ...table,
    '',
    `raw JSON-RPC floor: ${formatCount(report.floor.verificationsPerSecond)} payments/s, the batched mode's reads (the head and`,
    `one receipt a payment, ${formatCount(report.floor.batchSize)} calls a request, ${formatCount(report.floor.httpRequestsPerRun)} requests a run) sent with fetch alone,`,
    "measured in each run right after the batched mode; a ratio is the median of the runs' ratios",
    `batched: one verifyPayments call for all ${count} (latency: that call's wall time, over the runs)`,
    'naive: verifyPayments(chain, [check]) awaited one by one (latency: each verification, over every run)',
    '',
  ].join('\n')
}
