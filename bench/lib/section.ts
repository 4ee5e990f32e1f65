import { writeFileSync } from 'node:fs'

/** A goal of the issue and whether this run met it. */
export type Goal = { name: string; value: string; target: string; met: boolean }

/** What a section script hands the runner: its markdown (an H2 section) and its goals. */
export type SectionResult = { title: string; markdown: string; goals: Goal[] }

/** The flags every section takes: `--quick` (CI smoke: small and short) and `--json PATH` (for bench/run.ts). */
export function sectionFlags(argv = process.argv) {
  const jsonIndex = argv.indexOf('--json')
  return { quick: argv.includes('--quick'), json: jsonIndex > 0 ? (argv[jsonIndex + 1] ?? null) : null }
}

/** Prints the section and, when asked, writes it as JSON for the runner. */
export function finishSection(result: SectionResult, json: string | null): void {
  console.log(result.markdown)
  if (json) writeFileSync(json, JSON.stringify(result))
}

/** A markdown table from a header row and body rows. */
export function table(header: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n')
}

/** The median of `values`. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2
    ? (sorted[middle] ?? Number.NaN)
    : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2
}

/** The `fraction` percentile (0-1) of `values`, nearest rank. */
export function percentile(values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return (
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))] ?? Number.NaN
  )
}

/** Milliseconds as text with sensible precision. */
export const formatMs = (ms: number) =>
  ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : `${ms.toFixed(ms < 10 ? 2 : 1)} ms`

/** A whole number with thousands separators. */
export const formatCount = (value: number) => Math.round(value).toLocaleString('en')
