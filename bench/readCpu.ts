/**
 * CPU per request in process (reads, and writes: the ones bench/http.ts sends, new names for registrations), two
 * checkouts in turn: each checkout's server built as `bun start` builds it (`startServer`, on its own copy of one market
 * of 1,000 agents and 10,000 tasks with bench/http.ts's seller, its milestones and a task), as shipped (RATE_LIMITS=on
 * with raised policies, LOG_LEVEL=info, the log to /dev/null) and bare (LOG_LEVEL=off, no rate limits), and the floor
 * (bench/lib/floorApp.ts) on a copy too; each request kind goes through `app.handle`, 32 at a time, and
 * `process.cpuUsage()` gives the CPU per request (the median of 5 batches). Every run is its own process, A then B then
 * the floor, round after round, so the machine's drift hits all alike; it prints each side's median over the rounds,
 * B/A, each side's ratio to the floor, and as shipped / bare of each side. Bun's own HTTP work (parsing, the client's
 * address, writing the answer) is not in these figures: bench/http.ts measures it.
 * Usage: bun bench/readCpu.ts <checkout A> <checkout B> [rounds=3] [requests=20000] [kinds: words of their labels]
 * READ_CPU_USER=1 counts user CPU alone. READ_CPU_PROFILE=DIR runs each child under `bun --cpu-prof` into DIR/<side>-<mode>-<round> (bench/profileSummary.ts).
 * READ_CPU_TOGETHER=bare|shipped instead builds both checkouts' servers in that mode in one process (each on its own
 * copy) and alternates their batches, A then B, `rounds` x 3 times: the machine's drift then hits both alike, batch by
 * batch; it prints each side's median and B/A.
 */
import { Database } from 'bun:sqlite'
import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { Handles } from './lib/call.ts'
import { CONCURRENCY, cpuMicrosPer, warmedBatches } from './lib/cpu.ts'
import { floorApp } from './lib/floorApp.ts'
import { BARE_SETTINGS, SHIPPED_SETTINGS } from './lib/modes.ts'
import { table } from './lib/section.ts'
import { seededOwner, seedMarket } from './lib/seed.ts'
import { benchSeller, SELLER } from './lib/seller.ts'

const OWNER = seededOwner(0)
const BATCHES = 5

/**
 * A request kind: its market path and its floor path, given the task's id; a write also its method, its body (`n`
 * makes it unique), whether it sends the seller's key, and the status it answers.
 */
type Read = {
  label: string
  market: (task: string) => string
  floor: (task: string) => string
  method?: string
  body?: (n: number) => string
  keyed?: boolean
  status?: number
}
const READS: Read[] = [
  {
    label: 'GET task',
    market: (task) => `/api/agents/${SELLER}/tasks/${task}`,
    floor: (task) => `/task/${SELLER}/${task}`,
  },
  {
    label: 'GET agent record',
    market: () => `/api/community/agents/${SELLER}`,
    floor: () => `/agent/${SELLER}`,
  },
  {
    label: 'GET milestones',
    market: () => `/api/agents/${SELLER}/milestones`,
    floor: () => `/milestones/${SELLER}`,
  },
  { label: 'GET user profile', market: () => `/api/community/users/${OWNER}`, floor: () => `/user/${OWNER}` },
  {
    label: 'PUT agent bio',
    market: () => `/api/agents/${SELLER}`,
    floor: () => `/agent/${SELLER}`,
    method: 'PUT',
    body: (n) => `{"bio":"load ${n}"}`,
    keyed: true,
  },
  {
    label: 'POST milestone',
    market: () => `/api/agents/${SELLER}/milestones`,
    floor: () => `/milestone/${SELLER}`,
    method: 'POST',
    body: () => '{"date":"2026-11-01","title":"load"}',
    keyed: true,
    status: 201,
  },
  {
    label: 'POST order free',
    market: () => `/api/agents/${SELLER}/tasks`,
    floor: () => `/order/${SELLER}`,
    method: 'POST',
    body: () => '{"skill":"echo","params":{"q":1}}',
    status: 201,
  },
  {
    label: 'POST register',
    market: () => '/api/agents/register',
    floor: () => '/register',
    method: 'POST',
    body: (n) => `{"name":"w${process.pid}-${n}","bio":"load","skills":["ping"]}`,
  },
  {
    label: 'POST heartbeat',
    market: () => `/api/agents/${SELLER}/heartbeat`,
    floor: () => `/heartbeat/${SELLER}`,
    method: 'POST',
    keyed: true,
  },
  {
    // An order of the seller's paid skill without a credential (bench/mpp.ts's body): the MPP challenge.
    label: 'POST 402 challenge',
    market: () => `/api/agents/${SELLER}/tasks/deep-research`,
    floor: () => `/challenge/${SELLER}/deep-research`,
    method: 'POST',
    body: () => JSON.stringify({ params: { q: 'challenge' } }),
    status: 402,
  },
]

/** READ_CPU_USER=1: user CPU alone (a write's system CPU is mostly its sync, the same for the market and its floor). */
const userOnly = process.env.READ_CPU_USER === '1'

/** Numbers the requests of this process, so each write's body is its own. */
let sentSoFar = 0

/** The `n`th request of `read` to `path` (its body and the seller's key if it sends them). */
function requestOf(read: Read, path: string, key: string): Request {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (read.keyed) headers.authorization = `Bearer ${key}`
  const body = read.body?.(++sentSoFar)
  // Framed by its length, as over HTTP.
  if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body))
  return new Request(`http://127.0.0.1:3000${path}`, { method: read.method ?? 'GET', headers, body })
}

/** A kind's request to `path` and the status it must answer there. */
type Target = { read: Read; path: string; status: number }

/** The kinds' targets on the market (given the task's id), or on the floor. */
const targetsOf = (reads: Read[], task: string, floor = false): Target[] =>
  reads.map((read) => ({
    read,
    path: floor ? read.floor(task) : read.market(task),
    status: read.status ?? 200,
  }))

/** CPU µs per request of `count` requests to `target` through `app`, `CONCURRENCY` at a time. */
function cpuPerRequest(app: Handles, { read, path, status }: Target, key: string, count: number) {
  return cpuMicrosPer(
    count,
    async () => {
      const answers: (Promise<Response> | Response)[] = []
      for (let index = 0; index < CONCURRENCY; index++) answers.push(app.handle(requestOf(read, path, key)))
      for (const answer of await Promise.all(answers))
        if (answer.status !== status) throw new Error(`${path}: ${answer.status} ${await answer.text()}`)
    },
    userOnly,
  )
}

/** Each target's CPU µs per request through `app` (a warm-up first, then the median of `BATCHES` batches). */
async function measure(app: Handles, targets: Target[], key: string, requests: number): Promise<number[]> {
  const figures: number[] = []
  const count = Math.max(CONCURRENCY, requests / BATCHES)
  for (const target of targets)
    figures.push(median(await warmedBatches(() => cpuPerRequest(app, target, key, count), BATCHES)))
  return figures
}

const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)] ?? 0

/** The server of `checkout` as `bun start` builds it, in `mode`, on `file`. */
async function marketServer(checkout: string, mode: string, file: string) {
  const { startServer } = await import(`${checkout}/packages/server/src/serve.ts`)
  const { readSettings } = await import(`${checkout}/packages/server/src/env.ts`)
  const env = {
    DATABASE_URL: `file:${file}`,
    NODE_ENV: 'production',
    CHAIN_RPC_URL: 'http://127.0.0.1:9',
    PORT: '0',
    HOST: '127.0.0.1',
    ...(mode === 'shipped' ? SHIPPED_SETTINGS : BARE_SETTINGS),
  }
  return (await startServer(readSettings(env))) as { app: Handles; stop(): Promise<void> }
}

/** One child run: `checkout`'s server (or the floor) in `mode` on `file`; writes its figures to `out`. */
async function child() {
  const { READ_CPU_CHECKOUT = '', READ_CPU_MODE = 'bare', READ_CPU_DB = '', READ_CPU_OUT = '' } = process.env
  const task = process.env.READ_CPU_TASK ?? ''
  const key = process.env.READ_CPU_KEY ?? ''
  const requests = Number(process.env.READ_CPU_REQUESTS ?? 20_000)
  const wanted = READS.filter((read) => (process.env.READ_CPU_READS ?? '').split(',').includes(read.label))
  if (READ_CPU_MODE === 'prepare') {
    await Bun.write(READ_CPU_OUT, JSON.stringify(await prepare(READ_CPU_DB)))
    return
  }
  if (READ_CPU_MODE === 'floor') {
    const figures = await measure(floorApp(READ_CPU_DB, 'bun'), targetsOf(wanted, task, true), key, requests)
    await Bun.write(READ_CPU_OUT, JSON.stringify(figures))
    return
  }
  const server = await marketServer(READ_CPU_CHECKOUT, READ_CPU_MODE, READ_CPU_DB)
  const figures = await measure(server.app, targetsOf(wanted, task), key, requests)
  await server.stop()
  await Bun.write(READ_CPU_OUT, JSON.stringify(figures))
}

/**
 * Gives `file` (seeded) the measured seller (lib/seller.ts), its milestones and a task, through this checkout's server; the task's
 * id and the seller's key. Its own process: the seed writes with libsql-js, and two SQLite libraries on one file in one process lose each
 * other's locks.
 */
async function prepare(file: string) {
  const server = await marketServer(resolve(import.meta.dir, '..'), 'bare', file)
  const { key, taskId } = await benchSeller(server.app)
  await server.stop()
  // Into the file itself: the runs copy it alone.
  const db = new Database(file)
  db.run('PRAGMA wal_checkpoint(TRUNCATE)')
  db.close()
  return [taskId, key]
}

/** Runs one child: `side` (a checkout, or the floor) in `mode`; its figures, one per wanted read. */
async function run(
  folder: string,
  prepared: { file: string; task: string; key: string },
  label: string,
  env: Record<string, string>,
  copy = true,
) {
  const file = copy ? join(mkdtempSync(join(folder, 'run-')), 'market.db') : prepared.file
  if (copy) copyFileSync(prepared.file, file)
  const out = join(folder, `${label}.json`)
  const profile = process.env.READ_CPU_PROFILE
  const profiling = profile ? ['--cpu-prof', '--cpu-prof-dir', join(profile, label)] : []
  const child = Bun.spawn(['bun', ...profiling, import.meta.path], {
    env: {
      ...process.env,
      READ_CPU_CHILD: '1',
      READ_CPU_DB: file,
      READ_CPU_OUT: out,
      READ_CPU_TASK: prepared.task,
      READ_CPU_KEY: prepared.key,
      ...env,
    },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  if ((await child.exited) !== 0) throw new Error(`${label} failed`)
  return JSON.parse(readFileSync(out, 'utf8')) as (number | string)[]
}

/** The kinds whose labels hold one of the comma-separated words of `only` (every kind without any). */
const kindsOf = (only: string) =>
  READS.filter((read) => !only || only.split(',').some((word) => read.label.includes(word)))

/** The market every run copies, seeded and prepared in `folder`: its file, the task's id and the seller's key. */
async function preparedMarket(folder: string) {
  const file = join(folder, 'market.db')
  await seedMarket(file, { agents: 1_000, tasks: 10_000 })
  const [task = '', key = ''] = await run(
    folder,
    { file, task: '', key: '' },
    'prepare',
    { READ_CPU_MODE: 'prepare' },
    false,
  )
  return { file, task: String(task), key: String(key) }
}

async function main() {
  const [a = '', b = '', roundsArg = '3', requestsArg = '20000', only = ''] = process.argv.slice(2)
  if (!a || !b)
    throw new Error('usage: bun bench/readCpu.ts <checkout A> <checkout B> [rounds] [requests] [kinds]')
  const reads = kindsOf(only)
  const folder = mkdtempSync(join(tmpdir(), 'agentmarket-readcpu-'))
  const prepared = await preparedMarket(folder)
  const common = { READ_CPU_REQUESTS: requestsArg, READ_CPU_READS: reads.map((read) => read.label).join(',') }
  const sides = { A: resolve(a), B: resolve(b) }
  const figures: Record<string, number[][]> = {}
  const measured = async (label: string, env: Record<string, string>) =>
    (await run(folder, prepared, label, env)) as number[]
  for (let round = 0; round < Number(roundsArg); round++) {
    for (const mode of ['shipped', 'bare']) {
      for (const [side, checkout] of Object.entries(sides)) {
        const env = { ...common, READ_CPU_CHECKOUT: checkout, READ_CPU_MODE: mode }
        const key = `${side} ${mode}`
        figures[key] = [...(figures[key] ?? []), await measured(`${side}-${mode}-${round}`, env)]
      }
    }
    figures.floor = [
      ...(figures.floor ?? []),
      await measured(`floor-${round}`, { ...common, READ_CPU_MODE: 'floor' }),
    ]
  }
  const of = (key: string, index: number) => median((figures[key] ?? []).map((row) => row[index] ?? 0))
  const rows = reads.flatMap((read, index) =>
    ['shipped', 'bare'].map((mode) => {
      const [before, after, floor] = [of(`A ${mode}`, index), of(`B ${mode}`, index), of('floor', index)]
      const bareOf = (side: string) => of(`${side} bare`, index)
      return [
        read.label,
        mode,
        before.toFixed(1),
        after.toFixed(1),
        (after / before).toFixed(2),
        floor.toFixed(1),
        (floor / before).toFixed(2),
        (floor / after).toFixed(2),
        mode === 'shipped'
          ? `${(bareOf('A') / before).toFixed(2)} / ${(bareOf('B') / after).toFixed(2)}`
          : '',
      ]
    }),
  )
  const clock = userOnly ? 'User CPU' : 'CPU'
  console.log(
    `${clock} µs per request in process, median of ${roundsArg} rounds (A ${sides.A}, B ${sides.B})`,
  )
  const header = [
    'kind',
    'mode',
    'A µs',
    'B µs',
    'B/A',
    'floor µs',
    'floor/A',
    'floor/B',
    'bare/shipped A / B',
  ]
  console.log(table(header, rows))
}

/** Both checkouts' servers in one process (`mode`), their batches of each kind alternated; medians and B/A. */
async function together(mode: string) {
  const [a = '', b = '', roundsArg = '3', requestsArg = '20000', only = ''] = process.argv.slice(2)
  const folder = mkdtempSync(join(tmpdir(), 'agentmarket-readcpu-'))
  const prepared = await preparedMarket(folder)
  const servers = []
  for (const [side, checkout] of [
    ['A', a],
    ['B', b],
  ] as const) {
    const copy = join(mkdtempSync(join(folder, `${side}-`)), 'market.db')
    copyFileSync(prepared.file, copy)
    servers.push(await marketServer(resolve(checkout), mode, copy))
  }
  const size = Math.max(CONCURRENCY, Number(requestsArg) / BATCHES)
  const rows = []
  for (const target of targetsOf(kindsOf(only), prepared.task)) {
    const figures: number[][] = [[], []]
    for (const server of servers) await cpuPerRequest(server.app, target, prepared.key, size)
    for (let round = 0; round < Number(roundsArg) * 3; round++)
      for (const [index, server] of servers.entries())
        figures[index]?.push(await cpuPerRequest(server.app, target, prepared.key, size))
    const [before, after] = figures.map(median) as [number, number]
    rows.push([target.read.label, mode, before.toFixed(1), after.toFixed(1), (after / before).toFixed(2)])
  }
  for (const server of servers) await server.stop()
  console.log(
    `CPU µs per request in one process, batches of ${size} alternated (A ${resolve(a)}, B ${resolve(b)})`,
  )
  console.log(table(['kind', 'mode', 'A µs', 'B µs', 'B/A'], rows))
}

const togetherMode = process.env.READ_CPU_TOGETHER
await (process.env.READ_CPU_CHILD ? child() : togetherMode ? together(togetherMode) : main())
