/**
 * Measures the single binary: size, time from exec to the first 200 of /api/community/health on a new
 * file database, and resident memory when idle. Builds to a temp folder, runs from another one.
 * Usage: bun bench/binary.ts [--runs N]   (writes bench/results/binary.md)
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir, totalmem } from 'node:os'
import { join, resolve } from 'node:path'
import { freePort, runToEnd } from '../tests/support/process.ts'

const root = resolve(import.meta.dir, '..')
const runsFlag = process.argv.indexOf('--runs')
const runs = runsFlag > 0 ? Number(process.argv[runsFlag + 1]) : 20
const work = mkdtempSync(join(tmpdir(), 'agentmarket-bench-'))
const binary = join(work, 'agentmarket')

const build = await runToEnd(['bun', 'run', 'build', '--outfile', binary], { cwd: root })
if (build.exitCode !== 0) throw new Error(build.stderr)

/** Milliseconds from spawn to the first 200 of health, polling every millisecond. */
async function timeToHealthy(port: number, database: string) {
  const started = performance.now()
  const child = Bun.spawn([binary], {
    cwd: work,
    env: { PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: `file:${database}` },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${port}/api/community/health`)
      .then((response) => response.status === 200)
      .catch(() => false)
    if (ok) return { child, ms: performance.now() - started }
    if (performance.now() - started > 10_000) throw new Error('binary did not start')
    await Bun.sleep(1)
  }
}

function residentMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN)
  return kib / 1024
}

const starts: number[] = []
let idleRss = 0
for (let run = 0; run < runs; run++) {
  const folder = join(work, `db-${run}`)
  mkdirSync(folder)
  const { child, ms } = await timeToHealthy(freePort(), join(folder, 'market.db'))
  starts.push(ms)
  if (run === runs - 1) {
    await Bun.sleep(2000)
    idleRss = residentMiB(child.pid)
  }
  child.kill()
  await child.exited
}
starts.sort((a, b) => a - b)
const median = starts[Math.floor(starts.length / 2)] ?? Number.NaN
const sizeMiB = statSync(binary).size / 1024 / 1024
rmSync(work, { recursive: true, force: true })

const report = `# Single binary

Measured ${new Date().toISOString().slice(0, 10)} with \`bun bench/binary.ts --runs ${runs}\` on ${cpus().length} cores,
${(totalmem() / 2 ** 30).toFixed(0)} GiB, Bun ${Bun.version}. Each start is a new file database (migrations applied).

| figure | value |
|---|---|
| size | ${sizeMiB.toFixed(1)} MiB |
| exec to first 200 of health, median of ${runs} | ${median.toFixed(0)} ms |
| exec to first 200 of health, min / max | ${starts[0]?.toFixed(0)} / ${starts.at(-1)?.toFixed(0)} ms |
| resident memory, idle 2 s after start | ${idleRss.toFixed(1)} MiB |
`
mkdirSync(join(root, 'bench/results'), { recursive: true })
writeFileSync(join(root, 'bench/results/binary.md'), report)
console.log(report)
