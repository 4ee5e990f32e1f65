/**
 * Runs every benchmark section, one process each, and writes their figures side by side with the machine and the
 * date: bench/RESULTS.md (full mode) or bench/RESULTS.quick.md (--quick: small and short, a smoke run for CI).
 * Usage: bun run bench [--quick] [--only name,name] [--million] (--million: scale also measures 1,000,000 agents)
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir, totalmem } from 'node:os'
import { join, resolve } from 'node:path'
import { runToEnd } from '../tests/support/process.ts'
import { type SectionResult, sectionFlags, table } from './lib/section.ts'
import { hasWrk } from './lib/wrk.ts'

const root = resolve(import.meta.dir, '..')
const { quick } = sectionFlags()
const onlyIndex = process.argv.indexOf('--only')
const only = onlyIndex > 0 ? (process.argv[onlyIndex + 1] ?? '').split(',') : null
/** The sections in the order they run (each is `bun bench/<name>.ts`). */
const SECTIONS = [
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
].filter((name) => !only || only.includes(name))

if (!(await hasWrk())) {
  console.error('bench: wrk is missing; install it with `apt-get install wrk` (Debian)')
  process.exit(1)
}

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-bench-'))
const results: SectionResult[] = []
/** The machine's 1-minute load average when each section started and ended: figures beside others' work are suspect. */
const loads: string[] = []
const load = () => loadavg()[0]?.toFixed(1) ?? '?'
const started = performance.now()
for (const name of SECTIONS) {
  const jsonPath = join(folder, `${name}.json`)
  const sectionStarted = performance.now()
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
  results.push(JSON.parse(readFileSync(jsonPath, 'utf8')) as SectionResult)
  loads.push(`${name} ${loadBefore}-${load()}`)
  console.log(`bench: ${name} done in ${seconds} s`)
}
rmSync(folder, { recursive: true, force: true })
const totalSeconds = ((performance.now() - started) / 1000).toFixed(0)

const cpuModel = cpus()[0]?.model.trim() ?? 'unknown'
const goals = results.flatMap((result) => result.goals)
const report = `# Benchmark results

Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC with \`bun run bench${quick ? ' --quick' : ''}\` (${totalSeconds} s) on
${cpus().length} cores of ${cpuModel}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Bun ${Bun.version}, Linux. The machine's 1-minute load
average at each section's start and end (about 1 is the bench alone): ${loads.join(', ')}.
${quick ? '\nQuick mode: small data and short runs, a smoke test of the scripts; the figures are not the ones to quote.\n' : ''}
## Goals

${table(
  ['goal', 'measured', 'target', 'met'],
  goals.map((goal) => [goal.name, goal.value, goal.target, goal.met ? 'yes' : '**no**']),
)}

${results.map((result) => result.markdown.trim()).join('\n\n')}

${readFileSync(join(root, 'bench/FAULTS.md'), 'utf8').trim()}

${readFileSync(join(root, 'bench/CHANGES.md'), 'utf8').trim()}
`
const out = join(root, 'bench', quick ? 'RESULTS.quick.md' : 'RESULTS.md')
writeFileSync(out, report)
// Formatted as the repository's checks want it, so a fresh run can be committed as it is.
await runToEnd(['bunx', 'biome', 'format', '--write', out], { cwd: root })
console.log(`bench: wrote ${out} (${goals.filter((goal) => goal.met).length} of ${goals.length} goals met)`)
