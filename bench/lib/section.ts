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

// The binary's benchmark (`agentmarket bench verify`) computes and prints with the same functions.
export { formatCount, formatMs } from '../../packages/server/src/bench/format.ts'
export { median, percentile } from '../../packages/server/src/bench/percentile.ts'
