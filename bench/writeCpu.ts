/**
 * CPU per write in process, two checkouts in turn, as bench/readCpu.ts does for reads: each checkout's server built as
 * `bun start` builds it, as shipped (RATE_LIMITS=on with raised policies, LOG_LEVEL=info, the log to /dev/null) and bare
 * (LOG_LEVEL=off, no rate limits), and the floor (bench/lib/floorApp.ts), each on its own copy of one market of 1,000
 * agents with bench/http.ts's seller; each write (the bodies bench/http.ts sends, new names for registrations) goes
 * through `app.handle` 32 at a time, and `process.cpuUsage()` gives the CPU per request (the median of 5 batches).
 * Every run is its own process, A then B then the floor, round after round; it prints each side's median over the
 * rounds, B/A, each side's ratio to the floor, and as shipped / bare of each side.
 * Usage: bun bench/writeCpu.ts <checkout A> <checkout B> [rounds=3] [requests=6000] [writes: words of their labels]
 * WRITE_CPU_TOGETHER=bare|shipped instead builds both checkouts' servers in that mode in one process (each on its own
 * copy) and alternates their batches, A then B, `rounds` x 3 times: the machine's drift then hits both alike, batch by
 * batch; it prints each side's median and B/A.
 * WRITE_CPU_PROFILE=DIR runs each child under `bun --cpu-prof` into DIR/<side>-<mode>-<round> (bench/profileSummary.ts).
 */
import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { DEFAULT_RATE_POLICIES } from '@agentmarket/core/routes'
import { floorApp } from './lib/floorApp.ts'
import { table } from './lib/section.ts'
import { seedMarket } from './lib/seed.ts'

const SELLER = 'bench-seller'
/** Requests in flight at once, as wrk's 32 connections. */
const CONCURRENCY = 32
const BATCHES = 5

/** A request: method, path and body (`n` numbers it, so registrations take new names). */
type Call = { method: string; path: string; body?: (n: number) => string; bearer?: boolean }
/** A write: its market request and its floor request. */
type Write = { label: string; market: Call; floor: Call }
const WRITES: Write[] = [
  {
    label: 'POST register',
    market: {
      method: 'POST',
      path: '/api/agents/register',
      body: (n) => `{"name":"w${process.pid}-${n}","bio":"load","skills":["ping"]}`,
    },
    floor: {
      method: 'POST',
      path: '/register',
      body: (n) => `{"name":"f${process.pid}-${n}","bio":"load","skills":["ping"]}`,
    },
  },
  {
    label: 'POST heartbeat',
    market: { method: 'POST', path: `/api/agents/${SELLER}/heartbeat`, bearer: true },
    floor: { method: 'POST', path: `/heartbeat/${SELLER}` },
  },
  {
    label: 'POST order, free skill',
    market: {
      method: 'POST',
      path: `/api/agents/${SELLER}/tasks`,
      body: () => '{"skill":"echo","params":{"q":1}}',
    },
    floor: { method: 'POST', path: `/order/${SELLER}` },
  },
]

/** Anything that answers a Request in process. */
type Handles = { handle(request: Request): Promise<Response> | Response }

let numbered = 0
/** The Request of `call` (the seller's key for a bearer). */
function requestOf(call: Call, key: string): Request {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (call.bearer) headers.authorization = `Bearer ${key}`
  return new Request(`http://127.0.0.1:3000${call.path}`, {
    method: call.method,
    headers,
    body: call.body?.(++numbered),
  })
}

/** CPU µs per request of `count` requests of `call` through `app`, `CONCURRENCY` at a time. */
async function cpuPerRequest(app: Handles, call: Call, key: string, count: number): Promise<number> {
  const cpu = process.cpuUsage()
  for (let sent = 0; sent < count; sent += CONCURRENCY) {
    const answers: (Promise<Response> | Response)[] = []
    for (let index = 0; index < CONCURRENCY; index++) answers.push(app.handle(requestOf(call, key)))
    for (const answer of await Promise.all(answers))
      if (answer.status >= 300) throw new Error(`${call.path}: ${answer.status} ${await answer.text()}`)
  }
  const used = process.cpuUsage(cpu)
  return (used.user + used.system) / count
}

const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)] ?? 0

/** Each call's CPU µs per request through `app` (a warm-up first, then the median of `BATCHES` batches). */
async function measure(app: Handles, calls: Call[], key: string, requests: number): Promise<number[]> {
  const figures: number[] = []
  const size = Math.max(CONCURRENCY, requests / BATCHES)
  for (const call of calls) {
    await cpuPerRequest(app, call, key, size)
    const batches: number[] = []
    for (let batch = 0; batch < BATCHES; batch++) batches.push(await cpuPerRequest(app, call, key, size))
    figures.push(median(batches))
  }
  return figures
}

/** The server of `checkout` as `bun start` builds it, in `mode`, on `file`. */
async function marketServer(checkout: string, mode: string, file: string) {
  const { startServer } = await import(`${checkout}/packages/server/src/serve.ts`)
  const { readSettings } = await import(`${checkout}/packages/server/src/env.ts`)
  const unlimited = Object.keys(DEFAULT_RATE_POLICIES)
    .map((name) => `${name}=99999999/60`)
    .join(',')
  const env = {
    DATABASE_URL: `file:${file}`,
    NODE_ENV: 'production',
    CHAIN_RPC_URL: 'http://127.0.0.1:9',
    PORT: '0',
    HOST: '127.0.0.1',
    ...(mode === 'shipped'
      ? { RATE_LIMITS: 'on', RATE_LIMIT_POLICIES: unlimited, LOG_LEVEL: 'info' }
      : { RATE_LIMITS: 'off', LOG_LEVEL: 'off' }),
  }
  return (await startServer(readSettings(env))) as { app: Handles; stop(): Promise<void> }
}

/** One child run: `checkout`'s server (or the floor) in `mode` on `file`; writes its figures to `out`. */
async function child() {
  const {
    WRITE_CPU_CHECKOUT = '',
    WRITE_CPU_MODE = 'bare',
    WRITE_CPU_DB = '',
    WRITE_CPU_OUT = '',
  } = process.env
  const key = process.env.WRITE_CPU_KEY ?? ''
  const requests = Number(process.env.WRITE_CPU_REQUESTS ?? 6_000)
  const wanted = WRITES.filter((write) =>
    (process.env.WRITE_CPU_WRITES ?? '').split('|').includes(write.label),
  )
  if (WRITE_CPU_MODE === 'prepare') {
    const server = await marketServer(resolve(import.meta.dir, '..'), 'bare', WRITE_CPU_DB)
    const body = { name: SELLER, bio: 'Benchmarks', skills: ['Echo'] }
    const answer = await server.app.handle(
      new Request('http://127.0.0.1:3000/api/agents/register', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
    )
    const { apiKey } = (await answer.json()) as { apiKey: string }
    await server.stop()
    await Bun.write(WRITE_CPU_OUT, JSON.stringify([apiKey]))
    return
  }
  if (WRITE_CPU_MODE === 'floor') {
    const app = floorApp(WRITE_CPU_DB, 'bun')
    const figures = await measure(
      app,
      wanted.map((write) => write.floor),
      key,
      requests,
    )
    await Bun.write(WRITE_CPU_OUT, JSON.stringify(figures))
    return
  }
  const server = await marketServer(WRITE_CPU_CHECKOUT, WRITE_CPU_MODE, WRITE_CPU_DB)
  const figures = await measure(
    server.app,
    wanted.map((write) => write.market),
    key,
    requests,
  )
  await server.stop()
  await Bun.write(WRITE_CPU_OUT, JSON.stringify(figures))
}

/** Runs one child (a checkout, or the floor) on a copy of the prepared market; its figures, one per wanted write. */
async function run(
  folder: string,
  prepared: { file: string; key: string },
  label: string,
  env: Record<string, string>,
  copy = true,
) {
  const file = copy ? join(mkdtempSync(join(folder, 'run-')), 'market.db') : prepared.file
  if (copy) copyFileSync(prepared.file, file)
  const out = join(folder, `${label}.json`)
  const profile = process.env.WRITE_CPU_PROFILE
  const profiling = profile ? ['--cpu-prof', '--cpu-prof-dir', join(profile, label)] : []
  const child = Bun.spawn(['bun', ...profiling, import.meta.path], {
    env: {
      ...process.env,
      WRITE_CPU_CHILD: '1',
      WRITE_CPU_DB: file,
      WRITE_CPU_OUT: out,
      WRITE_CPU_KEY: prepared.key,
      ...env,
    },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  if ((await child.exited) !== 0) throw new Error(`${label} failed`)
  return JSON.parse(readFileSync(out, 'utf8')) as (number | string)[]
}

async function main() {
  const [a = '', b = '', roundsArg = '3', requestsArg = '6000', only = ''] = process.argv.slice(2)
  if (!a || !b)
    throw new Error('usage: bun bench/writeCpu.ts <checkout A> <checkout B> [rounds] [requests] [writes]')
  const writes = WRITES.filter((write) => !only || only.split(',').some((word) => write.label.includes(word)))
  const folder = mkdtempSync(join(tmpdir(), 'agentmarket-writecpu-'))
  const file = join(folder, 'market.db')
  await seedMarket(file, { agents: 1_000, tasks: 10_000 })
  const [key = ''] = await run(folder, { file, key: '' }, 'prepare', { WRITE_CPU_MODE: 'prepare' }, false)
  const prepared = { file, key: String(key) }
  const common = {
    WRITE_CPU_REQUESTS: requestsArg,
    WRITE_CPU_WRITES: writes.map((write) => write.label).join('|'),
  }
  const sides = { A: resolve(a), B: resolve(b) }
  const figures: Record<string, number[][]> = {}
  const measured = async (label: string, env: Record<string, string>) =>
    (await run(folder, prepared, label, env)) as number[]
  for (let round = 0; round < Number(roundsArg); round++) {
    for (const mode of ['shipped', 'bare'])
      for (const [side, checkout] of Object.entries(sides)) {
        const env = { ...common, WRITE_CPU_CHECKOUT: checkout, WRITE_CPU_MODE: mode }
        const name = `${side} ${mode}`
        figures[name] = [...(figures[name] ?? []), await measured(`${side}-${mode}-${round}`, env)]
      }
    figures.floor = [
      ...(figures.floor ?? []),
      await measured(`floor-${round}`, { ...common, WRITE_CPU_MODE: 'floor' }),
    ]
  }
  const of = (name: string, index: number) => median((figures[name] ?? []).map((row) => row[index] ?? 0))
  const rows = writes.flatMap((write, index) =>
    ['shipped', 'bare'].map((mode) => {
      const [before, after, floor] = [of(`A ${mode}`, index), of(`B ${mode}`, index), of('floor', index)]
      const bareOf = (side: string) => of(`${side} bare`, index)
      return [
        write.label,
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
  console.log(`CPU µs per request in process, median of ${roundsArg} rounds (A ${sides.A}, B ${sides.B})`)
  console.log(
    table(
      ['write', 'mode', 'A µs', 'B µs', 'B/A', 'floor µs', 'floor/A', 'floor/B', 'bare/shipped A / B'],
      rows,
    ),
  )
}

/** Both checkouts' servers in one process (`mode`), their batches of each write alternated; medians and B/A. */
async function together(mode: string) {
  const [a = '', b = '', roundsArg = '3', requestsArg = '6000', only = ''] = process.argv.slice(2)
  const writes = WRITES.filter((write) => !only || only.split(',').some((word) => write.label.includes(word)))
  const folder = mkdtempSync(join(tmpdir(), 'agentmarket-writecpu-'))
  const file = join(folder, 'market.db')
  await seedMarket(file, { agents: 1_000, tasks: 10_000 })
  const [key = ''] = await run(folder, { file, key: '' }, 'prepare', { WRITE_CPU_MODE: 'prepare' }, false)
  const servers = []
  for (const [side, checkout] of [
    ['A', a],
    ['B', b],
  ] as const) {
    const copy = join(mkdtempSync(join(folder, `${side}-`)), 'market.db')
    copyFileSync(file, copy)
    servers.push(await marketServer(resolve(checkout), mode, copy))
  }
  const size = Math.max(CONCURRENCY, Number(requestsArg) / BATCHES)
  const rows = []
  for (const write of writes) {
    const figures: number[][] = [[], []]
    for (const server of servers) await cpuPerRequest(server.app, write.market, String(key), size)
    for (let round = 0; round < Number(roundsArg) * 3; round++)
      for (const [index, server] of servers.entries())
        figures[index]?.push(await cpuPerRequest(server.app, write.market, String(key), size))
    const [before, after] = figures.map(median) as [number, number]
    rows.push([write.label, mode, before.toFixed(1), after.toFixed(1), (after / before).toFixed(2)])
  }
  for (const server of servers) await server.stop()
  console.log(
    `CPU µs per request in one process, batches of ${size} alternated (A ${resolve(a)}, B ${resolve(b)})`,
  )
  console.log(table(['write', 'mode', 'A µs', 'B µs', 'B/A'], rows))
}

const togetherMode = process.env.WRITE_CPU_TOGETHER
await (process.env.WRITE_CPU_CHILD ? child() : togetherMode ? together(togetherMode) : main())
