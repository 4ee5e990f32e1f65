/**
 * Keyed writes at length (issue 41): N writes under fresh Idempotency-Keys in one hour (milestones of one agent, through
 * core's fetch handler, in process) on libSQL (a file) and on PostgreSQL, and what the last of them cost against the
 * first: the bytes each write sends to the key-value store (the JSON of every kvPut and of every kvUpdate that sets),
 * its kv calls, and this process's CPU per write (`process.cpuUsage()`; PostgreSQL's own CPU is not in it). Before the
 * kv entries carried an expiry, each write also appended its entry's name to an hour's list (one of 16) and wrote the
 * whole list again, so its bytes grew with the hour's writes.
 * Each run is a child process; with `--before DIR` (another checkout, `bun install` done) the children of DIR and of
 * this checkout run in turns, round after round, so the shared machine's drift hits both alike. A section of
 * `bun run bench`: its goal is that a keyed write's bytes do not grow with the hour's writes (last window / first).
 * Usage: bun bench/kvWrites.ts [--quick] [--json PATH] [--before DIR] [--writes N] [--rounds R]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { startPostgres } from '../tests/support/postgres.ts'
import { finishSection, formatCount, type Goal, median, sectionFlags, table } from './lib/section.ts'

/** The figures of one window of writes: per write, medians over the window's writes. */
type Window = { bytes: number; kvCalls: number; cpuUs: number }
/** One child's run: the first window (after a warm-up) and the last. */
type Run = { first: Window; last: Window }

const argv = process.argv
const flag = (name: string) => {
  const at = argv.indexOf(name)
  return at >= 0 ? argv[at + 1] : undefined
}
const WINDOW = 500
/** The goal: the last window's bytes per write at most this many times the first's (they must not grow). */
const BYTES_GROWTH_GOAL = 1.5
/** How the section names each store. */
const STORE_NAMES: Record<string, string> = { libsql: 'libSQL', postgres: 'PostgreSQL' }

if (argv.includes('--child')) await child()
else await parent()

/** Runs N keyed writes on the store at `--url` with the checkout `--checkout`, and prints its Run as JSON. */
async function child() {
  const checkout = flag('--checkout') ?? ''
  const url = flag('--url') ?? ''
  const writes = Number(flag('--writes'))
  const core = await import(join(checkout, 'packages/core/src/index.ts'))
  const store = url.startsWith('postgres')
    ? await (await import(join(checkout, 'packages/store-postgres/src/index.ts'))).postgresStore(
        await (await import(join(checkout, 'packages/store-postgres/src/open.ts'))).openPostgres(url, {
          max: 4,
        }),
      )
    : (await import(join(checkout, 'packages/store-libsql/src/index.ts'))).libsqlStore(
        await (await import(join(checkout, 'packages/store-libsql/src/index.ts'))).openDatabase(url),
      )
  let bytes = 0
  let kvCalls = 0
  const size = (value: unknown) => JSON.stringify(value).length
  for (const name of ['kvGet', 'kvPut', 'kvUpdate', 'kvDelete', 'kvSweepExpired']) {
    const real = store[name]?.bind(store)
    if (!real) continue
    store[name] = (...args: unknown[]) => {
      kvCalls++
      if (name === 'kvPut') bytes += size(args[1])
      if (name !== 'kvUpdate') return real(...args)
      const change = args[1] as (current: unknown) => { op: string; value?: unknown }
      return real(args[0], (current: unknown) => {
        const outcome = change(current)
        if (outcome.op === 'set') bytes += size(outcome.value)
        return outcome
      })
    }
  }
  // Every write in one hour: the clock moves 1 ms per write from the start of an hour.
  const clock = core.manualClock('2026-06-01T12:00:00.000Z')
  const base = 'http://market.bench'
  const config = core.defaultConfig(base, { idempotencyQuota: { answers: 1e9, bytes: 1e12 } })
  const handler = core.createFetchHandler(core.Marketplace.create({ store, clock, config }))
  const send = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const response = await handler.fetch(
      new Request(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      }),
    )
    if (response.status >= 300) throw new Error(`${path}: ${response.status} ${await response.text()}`)
    return response.json()
  }
  const { apiKey } = await send('/api/agents/register', { name: 'writer' })
  const write = async (n: number): Promise<Window> => {
    clock.advance(1)
    bytes = 0
    kvCalls = 0
    const start = process.cpuUsage()
    await send(
      '/api/agents/writer/milestones',
      { date: '2026-05-01', title: `m${n}` },
      { authorization: `Bearer ${apiKey}`, 'idempotency-key': `k-${n}` },
    )
    const spent = process.cpuUsage(start)
    return { bytes, kvCalls, cpuUs: spent.user + spent.system }
  }
  const windowOf = (samples: Window[]): Window => ({
    bytes: median(samples.map((sample) => sample.bytes)),
    kvCalls: median(samples.map((sample) => sample.kvCalls)),
    cpuUs: median(samples.map((sample) => sample.cpuUs)),
  })
  const warmUp = 100
  const samples: Window[] = []
  for (let n = 0; n < writes; n++) samples.push(await write(n))
  const run: Run = {
    first: windowOf(samples.slice(warmUp, warmUp + WINDOW)),
    last: windowOf(samples.slice(-WINDOW)),
  }
  await store.close()
  console.log(JSON.stringify(run))
}

/** Runs the children (this checkout, and `--before` in turns) and prints the section. */
async function parent() {
  const { quick, json } = sectionFlags()
  const writes = Number(flag('--writes') ?? (quick ? 2_000 : 20_000))
  const rounds = Number(flag('--rounds') ?? (quick ? 1 : 3))
  const here = resolve(import.meta.dir, '..')
  const before = flag('--before')
  const sides = before ? [{ label: 'before', checkout: resolve(before) }] : []
  sides.push({ label: before ? 'after' : 'this checkout', checkout: here })
  const folder = mkdtempSync(join(tmpdir(), 'agentmarket-bench-kv-'))
  const postgres = await startPostgres()
  const runs = new Map<string, Run[]>()
  const loads: string[] = []
  try {
    for (let round = 0; round < rounds; round++)
      for (const side of sides)
        for (const kind of ['libsql', 'postgres']) {
          const url =
            kind === 'libsql'
              ? `file:${join(folder, `${side.label}-${round}.db`)}`
              : await postgres.createDatabase()
          loads.push((await Bun.file('/proc/loadavg').text()).split(' ').slice(0, 3).join(' '))
          const spawned = Bun.spawn(
            [
              'bun',
              join(here, 'bench/kvWrites.ts'),
              '--child',
              '--checkout',
              side.checkout,
              '--url',
              url,
              '--writes',
              String(writes),
            ],
            { cwd: side.checkout, stdout: 'pipe', stderr: 'inherit', env: { ...Bun.env, LOG_LEVEL: 'off' } },
          )
          const output = await new Response(spawned.stdout).text()
          if ((await spawned.exited) !== 0) throw new Error(`${side.label} on ${kind} failed`)
          const key = `${side.label}\u0000${kind}`
          const run: Run = JSON.parse(output.trim().split('\n').at(-1) ?? '')
          // Each run as it ends, so a long run stopped halfway still leaves its figures.
          console.error(
            `round ${round + 1}, ${side.label}, ${kind} (load ${loads.at(-1)}): ${JSON.stringify(run)}`,
          )
          runs.set(key, [...(runs.get(key) ?? []), run])
        }
  } finally {
    await postgres.stop()
    rmSync(folder, { recursive: true, force: true })
  }
  const rows = [...runs].map(([key, all]) => {
    const [label, kind] = key.split('\u0000')
    const of = (pick: (run: Run) => number) => median(all.map(pick))
    return [
      `${label}`,
      STORE_NAMES[kind ?? ''] ?? `${kind}`,
      formatCount(of((run) => run.first.bytes)),
      formatCount(of((run) => run.last.bytes)),
      of((run) => run.first.kvCalls),
      of((run) => run.last.kvCalls),
      formatCount(of((run) => run.first.cpuUs)),
      formatCount(of((run) => run.last.cpuUs)),
    ]
  })
  const measured = sides.at(-1)?.label ?? ''
  const goals: Goal[] = ['libsql', 'postgres'].map((kind) => {
    const all = runs.get(`${measured}\u0000${kind}`) ?? []
    const growth = median(all.map((run) => growthOf(run.first.bytes, run.last.bytes)))
    return {
      name: `keyed writes on ${STORE_NAMES[kind]}: bytes sent to the kv store per write, last ${WINDOW} / first ${WINDOW} of ${formatCount(writes)} in an hour`,
      value: `${growth.toFixed(2)}x`,
      target: `<= ${BYTES_GROWTH_GOAL}x`,
      met: growth <= BYTES_GROWTH_GOAL,
    }
  })
  const markdown = `## Keyed writes at length

${formatCount(writes)} writes under fresh Idempotency-Keys in one hour of the market's clock (milestones of one agent, through
core's fetch handler, in a child process) on a libSQL file and on a PostgreSQL database of their own, ${rounds} round(s):
for the first ${WINDOW} writes after 100 and for the last ${WINDOW}, the median bytes each write sends to the key-value store (the
JSON of each \`kvPut\` and of each \`kvUpdate\` that sets), its kv calls and the writing process's CPU per write
(\`process.cpuUsage()\`; PostgreSQL's own CPU is not in it), then the median over rounds. The bytes are counted, not
timed: before kv entries carried an expiry, a keyed write also rewrote an hour's list of names, so its bytes grew with
the hour's writes (bench/CHANGES.md). Load average (1, 5, 15 min) before each run: ${loads.join('; ')}.

${table(
  [
    'checkout',
    'store',
    'bytes / write (first)',
    'bytes / write (last)',
    'kv calls (first)',
    'kv calls (last)',
    'CPU µs / write (first)',
    'CPU µs / write (last)',
  ],
  rows,
)}
`
  finishSection({ title: 'Keyed writes at length', markdown, goals }, json)
}

/** How many times `first`'s bytes `last` is (1 when both are none). */
function growthOf(first: number, last: number): number {
  if (first === 0) return last === 0 ? 1 : Number.POSITIVE_INFINITY
  return last / first
}
