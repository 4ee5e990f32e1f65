/**
 * Measures the single binary: size, time from exec to the first 200 of /api/community/health on a new
 * file database, resident memory when idle, and resident memory after a load run (wrk on its agent card, list and
 * heartbeat). Builds to a temp folder (or measures `--binary PATH`, e.g. another checkout's build, for an A/B), runs
 * from another one.
 * Usage: bun bench/binary.ts [--quick] [--json PATH] [--runs N] [--binary PATH]
 */
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { freePort, runToEnd } from '../tests/support/process.ts'
import { cpuMs, residentMiB } from './lib/proc.ts'
import { finishSection, type Goal, median as medianOf, sectionFlags, table } from './lib/section.ts'
import { runWrk } from './lib/wrk.ts'

const root = resolve(import.meta.dir, '..')
const { quick, json } = sectionFlags()
const runsFlag = process.argv.indexOf('--runs')
const runs = runsFlag > 0 ? Number(process.argv[runsFlag + 1]) : quick ? 5 : 20
const loadSeconds = quick ? 2 : 10
const binaryFlag = process.argv.indexOf('--binary')
const work = mkdtempSync(join(tmpdir(), 'agentmarket-bench-'))
const binary = binaryFlag > 0 ? resolve(process.argv[binaryFlag + 1] ?? '') : join(work, 'agentmarket')

if (binaryFlag < 0) {
  const build = await runToEnd(['bun', 'run', 'build', '--outfile', binary], { cwd: root })
  if (build.exitCode !== 0) throw new Error(build.stderr)
}

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
    // The CPU of every thread up to the first 200 (the runtime's JIT and GC threads too), a count the load barely moves.
    if (ok) return { child, ms: performance.now() - started, cpu: cpuMs(child.pid) }
    if (performance.now() - started > 10_000) throw new Error('binary did not start')
    await Bun.sleep(1)
  }
}

const starts: number[] = []
const startCpu: number[] = []
let idleRss = 0
for (let run = 0; run < runs; run++) {
  const folder = join(work, `db-${run}`)
  mkdirSync(folder)
  const { child, ms, cpu } = await timeToHealthy(freePort(), join(folder, 'market.db'))
  starts.push(ms)
  startCpu.push(cpu)
  if (run === runs - 1) {
    await Bun.sleep(2000)
    idleRss = residentMiB(child.pid).now
  }
  child.kill()
  await child.exited
}
starts.sort((a, b) => a - b)
const median = medianOf(starts)
const sizeMiB = statSync(binary).size / 1024 / 1024

/** Resident memory after wrk drove the card, the list and heartbeats through a fresh binary. */
async function rssAfterLoad() {
  const folder = join(work, 'db-load')
  mkdirSync(folder)
  const port = freePort()
  const { child } = await timeToHealthy(port, join(folder, 'market.db'))
  const base = `http://127.0.0.1:${port}`
  const registered = await fetch(`${base}/api/agents/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'loaded', bio: 'under load', skills: ['ping'] }),
  }).then((response) => response.json() as Promise<{ apiKey: string }>)
  await runWrk({ url: `${base}/api/agents/loaded/agent-card.json`, seconds: loadSeconds })
  await runWrk({ url: `${base}/api/community/agents?q=load`, seconds: loadSeconds })
  const heartbeat = { method: 'POST', bearerKey: registered.apiKey }
  await runWrk({ url: `${base}/api/agents/loaded/heartbeat`, seconds: loadSeconds, ...heartbeat })
  const rss = residentMiB(child.pid).now
  child.kill()
  await child.exited
  return rss
}
const loadedRss = await rssAfterLoad()
rmSync(work, { recursive: true, force: true })

const goals: Goal[] = [
  {
    name: 'binary: exec to first 200 of health (median)',
    value: `${median.toFixed(0)} ms`,
    target: '<= 150 ms',
    met: median <= 150,
  },
  {
    name: 'binary: idle resident memory',
    value: `${idleRss.toFixed(1)} MiB`,
    target: '<= 80 MB (76.3 MiB)',
    met: idleRss * 2 ** 20 <= 80e6,
  },
]
const markdown = `## The single binary

\`bun run build\` into a temp folder, run from another one without node_modules, each start on a new file database
(migrations applied); health polled every millisecond. After the starts, one more binary served wrk for
${loadSeconds} s each on its card, its search and heartbeats, then its memory was read.

${table(
  ['figure', 'value'],
  [
    ['size', `${sizeMiB.toFixed(1)} MiB`],
    [`exec to first 200 of health, median of ${runs}`, `${median.toFixed(0)} ms`],
    ['exec to first 200 of health, min / max', `${starts[0]?.toFixed(0)} / ${starts.at(-1)?.toFixed(0)} ms`],
    [
      `CPU to first 200 of health (all threads, /proc), median of ${runs}`,
      `${medianOf(startCpu).toFixed(0)} ms`,
    ],
    ['resident memory, idle 2 s after start', `${idleRss.toFixed(1)} MiB`],
    ['resident memory after the load runs', `${loadedRss.toFixed(1)} MiB`],
  ],
)}
`
finishSection({ title: 'The single binary', markdown, goals }, json)
