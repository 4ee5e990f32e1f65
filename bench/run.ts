/**
 * Runs every benchmark section, one process each, and writes their figures side by side with the machine and the
 * date: bench/RESULTS.md (full mode) or bench/RESULTS.quick.md (--quick: small and short, a smoke run for CI).
 * Full mode keeps each section's result in bench/results.json, so `--only` measures some sections again and
 * RESULTS.md still carries the others, each with when and where it was measured (lib/results.ts).
 * Usage: bun run bench [--quick] [--only name,name] [--million] [--render] (--million: scale also measures 1,000,000
 * agents; --render measures nothing and writes RESULTS.md again from results.json, FAULTS.md and CHANGES.md)
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir, totalmem } from 'node:os'
import { join, resolve } from 'node:path'
import { runToEnd } from '../tests/support/process.ts'
import { type KeptSection, mergeKept, readKept, resultsReport, writeKept } from './lib/results.ts'
import { type SectionResult, sectionFlags } from './lib/section.ts'
import { hasWrk } from './lib/wrk.ts'

const root = resolve(import.meta.dir, '..')
const { quick } = sectionFlags()
const onlyIndex = process.argv.indexOf('--only')
const only = onlyIndex > 0 ? (process.argv[onlyIndex + 1] ?? '').split(',') : null
/** The sections in the order they run (each is `bun bench/<name>.ts`). */
const ALL_SECTIONS = [
  'verify',
  'http',
  'scale',
  'search',
  'binary',
  'mpp',
  'reference',
  'mail',
  'postgres',
  'kvWrites',
] as const
const render = process.argv.includes('--render')
const SECTIONS = ALL_SECTIONS.filter((name) => !render && (!only || only.includes(name)))
const unknown = (only ?? []).filter((name) => !(ALL_SECTIONS as readonly string[]).includes(name))
if (unknown.length > 0) {
  console.error(`bench: no section named ${unknown.join(', ')}; the sections: ${ALL_SECTIONS.join(', ')}`)
  process.exit(1)
}
if (render && quick) {
  console.error(
    'bench: --render rewrites RESULTS.md from the full runs kept in bench/results.json; --quick keeps none',
  )
  process.exit(1)
}

if (SECTIONS.length > 0 && !(await hasWrk())) {
  console.error('bench: wrk is missing; install it with `apt-get install wrk` (Debian)')
  process.exit(1)
}

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-bench-'))
const measured: KeptSection[] = []
/** The machine's 1-minute load average: figures beside others' work are suspect. */
const load = () => loadavg()[0]?.toFixed(1) ?? '?'
const machine = `${cpus().length} cores of ${cpus()[0]?.model.trim() ?? 'unknown'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Bun ${Bun.version}, Linux`
for (const name of SECTIONS) {
  const jsonPath = join(folder, `${name}.json`)
  const sectionStarted = performance.now()
  const measuredAt = new Date().toISOString().slice(0, 16).replace('T', ' ')
  const loadBefore = load()
  const million = name === 'scale' && process.argv.includes('--million') ? ['--million'] : []
  const args = ['bun', `bench/${name}.ts`, '--json', jsonPath, ...(quick ? ['--quick'] : []), ...million]
  const { exitCode, stderr } = await runToEnd(args, {
    cwd: root,
    env: { ...process.env } as Record<string, string>,
  })
  const seconds = ((performance.now() - sectionStarted) / 1000).toFixed(0)
  if (exitCode !== 0) {
    console.error(`bench: ${name} failed (exit ${exitCode}):\n${stderr}`)
    process.exit(1)
  }
  const result = JSON.parse(readFileSync(jsonPath, 'utf8')) as SectionResult
  measured.push({
    ...result,
    name,
    measuredAt,
    machine,
    load: `${loadBefore}-${load()}`,
    seconds: Number(seconds),
  })
  console.log(`bench: ${name} done in ${seconds} s`)
}
rmSync(folder, { recursive: true, force: true })

// A quick run stands alone; a full one replaces its sections among those kept from earlier full runs.
const keptPath = join(root, 'bench/results.json')
const sections = quick ? measured : mergeKept(readKept(keptPath), measured, ALL_SECTIONS)
if (!quick) writeKept(keptPath, sections)
const report = resultsReport(sections, {
  command: `bun run bench${quick ? ' --quick' : ''}`,
  quick,
  appendix: [
    readFileSync(join(root, 'bench/FAULTS.md'), 'utf8'),
    readFileSync(join(root, 'bench/CHANGES.md'), 'utf8'),
  ],
})
const out = join(root, 'bench', quick ? 'RESULTS.quick.md' : 'RESULTS.md')
writeFileSync(out, report)
// Formatted as the repository's checks want it, so a fresh run can be committed as it is.
await runToEnd(['bunx', 'biome', 'format', '--write', out, ...(quick ? [] : [keptPath])], { cwd: root })
const goals = sections.flatMap((section) => section.goals)
console.log(`bench: wrote ${out} (${goals.filter((goal) => goal.met).length} of ${goals.length} goals met)`)
