/**
 * The measured sections kept between runs (bench/results.json), so `bun run bench --only http` measures one section
 * again and bench/RESULTS.md still shows every section, each with the date, machine and load it was measured at.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { type SectionResult, table } from './section.ts'

/** One section's result as kept: when, where and at what load it was measured. */
export type KeptSection = SectionResult & {
  /** The section's script: `bench/<name>.ts`. */
  name: string
  /** `YYYY-MM-DD HH:MM` UTC when the section started. */
  measuredAt: string
  /** The cores, CPU, memory, Bun and OS it ran on. */
  machine: string
  /** The machine's 1-minute load average at the section's start and end. */
  load: string
  /** How long the section took. */
  seconds: number
}

/** The sections kept in `path`, or none when it does not exist yet. */
export function readKept(path: string): KeptSection[] {
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as KeptSection[]) : []
}

/** `kept` with each section of `measured` in place of the one of its name, in the order of `order`. */
export function mergeKept(
  kept: KeptSection[],
  measured: KeptSection[],
  order: readonly string[],
): KeptSection[] {
  const byName = new Map(kept.map((section) => [section.name, section]))
  for (const section of measured) byName.set(section.name, section)
  return order.flatMap((name) => byName.get(name) ?? [])
}

/** Writes the kept sections to `path`, one JSON document. */
export function writeKept(path: string, sections: KeptSection[]): void {
  writeFileSync(path, `${JSON.stringify(sections, null, 2)}\n`)
}

/** Where and when the sections were measured: one sentence for one run, a table when they come from several. */
function provenance(sections: KeptSection[], command: string): string {
  const first = sections[0]
  const loads = sections.map((section) => `${section.name} ${section.load}`).join(', ')
  const seconds = sections.reduce((sum, section) => sum + section.seconds, 0)
  if (first && sections.every((section) => section.machine === first.machine) && sameRun(sections)) {
    return `Measured from ${first.measuredAt} UTC with \`${command}\` (${seconds} s) on
${first.machine}. The machine's 1-minute load
average at each section's start and end (about 1 is the bench alone): ${loads}.`
  }
  return `Measured section by section (\`bun run bench --only <names>\` measures some again and keeps the others), each
with its date, machine and the machine's 1-minute load average at its start and end (about 1 is the bench alone):

${table(
  ['section', 'measured (UTC)', 'seconds', 'load', 'machine'],
  sections.map((section) => [
    section.name,
    section.measuredAt,
    section.seconds,
    section.load,
    section.machine,
  ]),
)}`
}

/** Whether the sections were measured by one run: each started when the ones before it had ended (to the minute). */
function sameRun(sections: KeptSection[]): boolean {
  const start = (section: KeptSection) => Date.parse(`${section.measuredAt.replace(' ', 'T')}:00Z`)
  const first = sections[0]
  let elapsed = 0
  return sections.every((section, index) => {
    // Dates are kept to the minute: a minute of slack per section.
    const fits =
      first !== undefined && Math.abs(start(section) - start(first) - elapsed * 1000) <= 60_000 * (index + 1)
    elapsed += section.seconds
    return fits
  })
}

/** The whole of RESULTS.md: provenance, the goals of every section, each section, then the faults and the changes. */
export function resultsReport(
  sections: KeptSection[],
  options: { command: string; quick: boolean; appendix: string[] },
): string {
  const goals = sections.flatMap((section) => section.goals)
  const quickNote = options.quick
    ? '\nQuick mode: small data and short runs, a smoke test of the scripts; the figures are not the ones to quote.\n'
    : ''
  return `# Benchmark results

${provenance(sections, options.command)}
${quickNote}
## Goals

${table(
  ['goal', 'measured', 'target', 'met'],
  goals.map((goal) => [goal.name, goal.value, goal.target, goal.met ? 'yes' : '**no**']),
)}

${sections.map((section) => section.markdown.trim()).join('\n\n')}

${options.appendix.map((text) => text.trim()).join('\n\n')}
`
}
