/**
 * HTTP under load: wrk (1 thread, 32 connections, loopback only, bounded runs) against the server started as a user
 * starts it (`bun start`, production mode, a file database seeded with 1,000 agents and 10,000 tasks). Each path is
 * measured four ways: an Elysia hello world (the machine's ceiling), then in turns, round after round, the market
 * bare (no rate limits, no request log), the market as shipped (both on), and its floor (bench/floor.ts: the least
 * database work on statements prepared once behind a bare Elysia route). Its database work is also timed in-process
 * on bun:sqlite and libsql-js. After the write runs, every write wrk saw acknowledged is looked up in the database.
 * What a row keeps as shipped, and of its floor, is judged by the servers' CPU per request (from /proc, over the same
 * rounds; each round's min-max printed beside it); what Bun itself charges a request for the shipped features
 * (bench/bunCosts.ts) caps the first; the cap is printed beside the row, which is judged against the lower of 0.9 and
 * its cap.
 * Usage: bun bench/http.ts [--quick] [--json PATH] [--only WORDS]   (--only: the rows whose label holds one of the
 * comma-separated words, e.g. --only "GET task,POST heartbeat"; the goals of the others are then not judged)
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { freePort, startMarketServer, waitForOk } from '../tests/support/process.ts'
import { call } from './lib/call.ts'
import { type FloorDriver, floorWork, keyDigest, openFloor, randomHex } from './lib/floorWork.ts'
import { BARE_SETTINGS, SHIPPED_SETTINGS } from './lib/modes.ts'
import { cpuMs } from './lib/proc.ts'
import { finishSection, formatCount, formatMs, type Goal, sectionFlags, table } from './lib/section.ts'
import { SEARCH_WORD, seededOwner, seedMarket } from './lib/seed.ts'
import { benchSeller, SELLER } from './lib/seller.ts'
import { runWrk, type WrkOptions, type WrkResult } from './lib/wrk.ts'

const { quick, json } = sectionFlags()
const onlyIndex = process.argv.indexOf('--only')
const only = onlyIndex > 0 ? (process.argv[onlyIndex + 1] ?? '').split(',').filter(Boolean) : null
const seconds = quick ? 1 : 5
const root = resolve(import.meta.dir, '..')
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-bench-http-'))
const database = join(folder, 'market.db')
const SIZE = { agents: 1_000, tasks: 10_000 }
/** The share of the bare market's throughput the shipped server (rate limits and request log on) must keep. */
const SHIPPED_GOAL = 0.9

await seedMarket(database, SIZE)

/** A helper process (hello world or the floor) on a free port, ready when its root answers. */
async function helper(script: string, env: Record<string, string>, probe: string) {
  const port = freePort()
  const child = Bun.spawn(['bun', script], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', PORT: String(port), NODE_ENV: 'production', ...env },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  await waitForOk(`http://127.0.0.1:${port}${probe}`, child)
  return { base: `http://127.0.0.1:${port}`, child }
}

const market = {
  DATABASE_URL: `file:${database}`,
  NODE_ENV: 'production',
  CHAIN_RPC_URL: 'http://127.0.0.1:9',
}
const bare = await startMarketServer({ ...market, ...BARE_SETTINGS })
const shipped = await startMarketServer({ ...market, ...SHIPPED_SETTINGS })

const { key, taskId } = await benchSeller(bare.base)
const keyHash = keyDigest(key)

const hello = await helper('bench/hello.ts', {}, '/')
const floor = await helper('bench/floor.ts', { DATABASE: database, DRIVER: 'bun' }, `/agent/${SELLER}`)

/** What GET task and every write keep of their floor's rate at the least (issue 41). */
const FLOOR_GOAL = 0.8

/** One path: its market request, its floor route, its in-process work, and its goal (ratio to hello world). */
type Path = {
  label: string
  request: Omit<WrkOptions, 'seconds' | 'url'> & { path: string }
  floor: Omit<WrkOptions, 'seconds' | 'url'> & { path: string }
  work: (work: ReturnType<typeof floorWork>, n: number) => unknown
  goal: number
  write?: boolean
  /** Issue 41: the least the path may keep of its floor's rate (GET task and every write). */
  floorGoal?: number
}
const owner = seededOwner(0)
const paths: Path[] = [
  {
    label: 'GET agent card (cached)',
    request: { path: `/api/agents/${SELLER}/agent-card.json` },
    floor: { path: `/agent/${SELLER}` },
    work: (w) => w.agent(SELLER),
    goal: 0.5,
  },
  {
    label: `GET agent list, q=${SEARCH_WORD} (cached)`,
    request: { path: `/api/community/agents?q=${SEARCH_WORD}&limit=20` },
    floor: { path: `/search?q=${SEARCH_WORD}` },
    work: (w) => w.search(SEARCH_WORD),
    goal: 0.25,
  },
  {
    label: 'GET agent record',
    request: { path: `/api/community/agents/${SELLER}` },
    floor: { path: `/agent/${SELLER}` },
    work: (w) => w.agent(SELLER),
    goal: 0.3,
  },
  {
    label: 'GET task by id (never cached)',
    request: { path: `/api/agents/${SELLER}/tasks/${taskId}` },
    floor: { path: `/task/${SELLER}/${taskId}` },
    work: (w) => w.task(SELLER, taskId),
    goal: 0.3,
    floorGoal: FLOOR_GOAL,
  },
  {
    label: 'GET milestones, first page',
    request: { path: `/api/agents/${SELLER}/milestones` },
    floor: { path: `/milestones/${SELLER}` },
    work: (w) => w.milestones(SELLER),
    goal: 0.3,
  },
  {
    label: 'GET user profile',
    request: { path: `/api/community/users/${owner}` },
    floor: { path: `/user/${owner}` },
    work: (w) => w.user(owner),
    goal: 0.3,
  },
  {
    label: 'POST heartbeat',
    request: { path: `/api/agents/${SELLER}/heartbeat`, method: 'POST', bearerKey: key },
    floor: { path: `/heartbeat/${SELLER}`, method: 'POST', bearerKey: key },
    work: (w) => w.heartbeat(SELLER, keyHash, Date.now()),
    goal: 0.2,
    write: true,
    floorGoal: FLOOR_GOAL,
  },
  {
    label: 'POST register',
    request: {
      path: '/api/agents/register',
      method: 'POST',
      body: '{"name":"%d","bio":"load","skills":["ping"]}',
      uniquePrefix: `w${Date.now().toString(36)}`,
    },
    // The same bodies: the floor reads the name from its body as the market does.
    floor: {
      path: '/register',
      method: 'POST',
      body: '{"name":"%d","bio":"load","skills":["ping"]}',
      uniquePrefix: `f${Date.now().toString(36)}`,
    },
    work: (w, n) => w.register(`inproc-${process.pid}-${n}`, Date.now()),
    // Issue 41's goal for a registration: its key, code, digests and rows make it the dearest write.
    goal: 0.06,
    write: true,
    floorGoal: FLOOR_GOAL,
  },
  {
    label: 'POST milestone',
    request: {
      path: `/api/agents/${SELLER}/milestones`,
      method: 'POST',
      body: '{"date":"2026-11-01","title":"load"}',
      bearerKey: key,
    },
    floor: {
      path: `/milestone/${SELLER}`,
      method: 'POST',
      body: '{"date":"2026-11-01","title":"load"}',
      bearerKey: key,
    },
    work: (w) =>
      w.milestone(SELLER, keyHash, {
        id: `ms_${randomHex(32)}`,
        date: '2026-11-01',
        title: 'load',
        at: Date.now(),
      }),
    goal: 0.1,
    write: true,
    floorGoal: FLOOR_GOAL,
  },
  {
    label: 'POST order, free skill',
    request: {
      path: `/api/agents/${SELLER}/tasks`,
      method: 'POST',
      body: '{"skill":"echo","params":{"q":1}}',
    },
    floor: { path: `/order/${SELLER}`, method: 'POST', body: '{"skill":"echo","params":{"q":1}}' },
    work: (w) => {
      const seller = w.seller(SELLER, 'echo')
      return seller && w.order(SELLER, seller.skill, `task_${randomHex(32)}`, '{"q":1}', Date.now())
    },
    goal: 0.1,
    write: true,
    floorGoal: FLOOR_GOAL,
  },
  {
    label: 'PUT agent profile (bio)',
    request: { path: `/api/agents/${SELLER}`, method: 'PUT', body: '{"bio":"load %d"}', bearerKey: key },
    floor: { path: `/agent/${SELLER}`, method: 'PUT', body: '{"bio":"load %d"}', bearerKey: key },
    work: (w, n) => w.updateBio(SELLER, keyHash, `in-process ${n}`, Date.now()),
    goal: 0.1,
    write: true,
    floorGoal: FLOOR_GOAL,
  },
]

const wanted = paths.filter((path) => !only || only.some((word) => path.label.includes(word)))

/**
 * A wrk run and its server's CPU per request (µs of user + system time, all threads, from /proc) and its busy share
 * (CPU over the run's wall time: below 1, something else, wrk or a sync, held the server back).
 */
type Counted = WrkResult & { cpuMicros: number; busy: number; wallMs: number }
/** The three servers a row measures in turns: the market bare and as shipped, and the row's floor. */
type Sides = { bare: Counted; shipped: Counted; floor: Counted }
/** A row: its hello-world run, its three servers' runs of each round, and each server's rounds taken as one. */
type Measured = Sides & { path: Path; hello: WrkResult; rounds: Sides[] }
const measured: Measured[] = []
const run = (base: string, { path, ...options }: Path['request'], runSeconds = seconds) =>
  runWrk({ ...options, url: `${base}${path}`, seconds: runSeconds })

/** `run`, also counting the CPU process `pid` spent on it: the load moves it far less than it moves req/s. */
async function counted(
  pid: number,
  base: string,
  request: Path['request'],
  runSeconds = seconds,
): Promise<Counted> {
  const before = cpuMs(pid)
  const started = performance.now()
  const result = await run(base, request, runSeconds)
  const wallMs = performance.now() - started
  const spent = cpuMs(pid) - before
  return { ...result, cpuMicros: (spent * 1000) / Math.max(1, result.requests), busy: spent / wallMs, wallMs }
}

/** Several runs of one server as one: their requests and CPU summed, their rates and latencies averaged. */
function together(runs: Counted[]): Counted {
  const requests = runs.reduce((sum, one) => sum + one.requests, 0)
  const sum = (figure: (one: Counted) => number) => runs.reduce((total, one) => total + figure(one), 0)
  const mean = (figure: (one: Counted) => number) => sum(figure) / Math.max(1, runs.length)
  return {
    requests,
    requestsPerSecond: mean((one) => one.requestsPerSecond),
    p50Ms: mean((one) => one.p50Ms),
    p99Ms: mean((one) => one.p99Ms),
    non2xx: sum((one) => one.non2xx),
    socketErrors: sum((one) => one.socketErrors),
    cpuMicros: sum((one) => one.cpuMicros * one.requests) / Math.max(1, requests),
    busy:
      sum((one) => one.busy * one.wallMs) /
      Math.max(
        1,
        sum((one) => one.wallMs),
      ),
    wallMs: sum((one) => one.wallMs),
  }
}

/**
 * Rounds of the three servers of a row and the seconds of each run (wrk takes whole seconds only): bare, shipped,
 * floor, then floor, shipped, bare, and so on. An even number of rounds puts each server at the same mean moment, so
 * a drift of the hour hits all three alike, and the writes (the three share one database) grow it under each alike;
 * the rounds' spread says whether a verdict is firm. Four rounds of 2 s: six of 1 s (the section's old time) spread
 * the rounds' CPU per request wider on a loaded machine (bench/CHANGES.md).
 */
const ROUNDS = quick ? 2 : 4
const turnSeconds = quick ? 1 : 2

/** One row's three servers measured in turns, `ROUNDS` rounds. */
async function inTurns(path: Path): Promise<Sides & { rounds: Sides[] }> {
  const servers: [keyof Sides, number, string, Path['request']][] = [
    ['bare', bare.process.pid, bare.base, path.request],
    ['shipped', shipped.process.pid, shipped.base, path.request],
    ['floor', floor.child.pid, floor.base, path.floor],
  ]
  const rounds: Sides[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? servers : servers.toReversed()
    const sides: Partial<Sides> = {}
    for (const [side, pid, base, request] of order)
      sides[side] = await counted(pid, base, request, turnSeconds)
    rounds.push(sides as Sides)
  }
  const pooled = (side: keyof Sides) => together(rounds.map((sides) => sides[side]))
  return { rounds, bare: pooled('bare'), shipped: pooled('shipped'), floor: pooled('floor') }
}
for (const path of wanted) {
  // Warm-up of all three (JIT, caches, the first WAL growth), then hello world, then the three in turns.
  for (const [base, request] of [
    [bare.base, path.request],
    [shipped.base, path.request],
    [floor.base, path.floor],
  ] as const)
    await run(base, request, 1)
  const helloRun = await run(hello.base, { path: '/' })
  measured.push({ path, hello: helloRun, ...(await inTurns(path)) })
}

// What Bun itself charges for the things every shipped answer does (bench/bunCosts.ts), each mode in turn.
const BUN_MODES = {
  plain: 'plain',
  address: '+ server.requestIP',
  read: '+ one request header read',
  header: '+ one response header',
  all: '+ all three',
} as const
const bunRuns = new Map<string, Counted[]>(Object.keys(BUN_MODES).map((mode) => [mode, []]))
for (let round = 0; round < 3; round++)
  for (const mode of Object.keys(BUN_MODES)) {
    const bunHelper = await helper('bench/bunCosts.ts', { MODE: mode }, '/')
    await runWrk({ url: `${bunHelper.base}/`, seconds: 1 })
    bunRuns.get(mode)?.push(await counted(bunHelper.child.pid, bunHelper.base, { path: '/' }))
    bunHelper.child.kill()
    await bunHelper.child.exited
  }
/** The median of a mode's 3 runs by `figure`. */
const bunMedian = (mode: string, figure: (run: Counted) => number) =>
  (bunRuns.get(mode) ?? []).map(figure).sort((a, b) => a - b)[1] ?? 0
const bunRate = (mode: string) => bunMedian(mode, (run) => run.requestsPerSecond)
/** Microseconds a mode adds to each request of the plain hello world (the req/s of both, as time per request). */
const bunMicros = (mode: string) => (1 / bunRate(mode) - 1 / bunRate('plain')) * 1e6
/** Microseconds of the server's CPU a mode adds to each request of the plain hello world. */
const bunCpuMicros = (mode: string) =>
  bunMedian(mode, (run) => run.cpuMicros) - bunMedian('plain', (run) => run.cpuMicros)
/**
 * The most a row can keep as shipped once it pays Bun's own costs of the shipped features (the client's address, a
 * request header read, a response header: `bunCpuMicros('all')` µs of CPU a request, whatever the server does): a
 * row spending `bare.cpuMicros` a request spends at least that much more as shipped, so it keeps at most
 * bare / (bare + cost) of its requests per CPU second: the cap.
 */
const capOf = (bare: Counted) => bare.cpuMicros / (bare.cpuMicros + Math.max(0, bunCpuMicros('all')))
/**
 * What a row keeps as shipped: the bare server's CPU per request over the shipped server's, in the same runs. On two
 * cores shared with wrk each server is CPU-bound, so this is its throughput ratio without the load's drift between
 * two runs (req/s ratios of one run each moved ±15% here; the req/s ratio is printed beside it).
 */
const keptShipped = ({ bare, shipped }: Sides) => bare.cpuMicros / shipped.cpuMicros
/**
 * What the bare market keeps of its floor: the floor's CPU per request over the market's, over the same rounds (the
 * req/s ratio, printed beside it, moved 0.69-0.85 between two quiet runs of one code when each was one run).
 */
const keptOfFloor = ({ bare, floor }: Sides) => floor.cpuMicros / bare.cpuMicros
/** The lowest and highest of `figure` over a row's rounds: how firm its verdict is. */
function spread(row: Measured, figure: (sides: Sides) => number): string {
  const values = row.rounds.map(figure)
  return `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`
}
/** What a row must keep as shipped: SHIPPED_GOAL, or its cap where that is lower. */
const shippedGoalOf = (bare: Counted) => Math.min(SHIPPED_GOAL, capOf(bare))
const cheapestBare = measured.reduce<Counted | null>(
  (least, { bare }) => (least && least.cpuMicros <= bare.cpuMicros ? least : bare),
  null,
)

// Every acknowledged write must be in the database (wrk may also count a few in flight as unfinished).
const acknowledged = (label: string) =>
  measured
    .filter(({ path }) => path.label === label)
    .reduce(
      (sum, { bare, shipped }) => sum + bare.requests - bare.non2xx + shipped.requests - shipped.non2xx,
      0,
    )
const agentsTotal = Number((await call(bare.base, 'GET', '/api/community/agents?limit=1')).total)
const registered = acknowledged('POST register')
const milestonesKept = Number(
  (await call(bare.base, 'GET', `/api/agents/${SELLER}/milestones?limit=1`)).total,
)
const milestonesAcked = acknowledged('POST milestone')
const durable = agentsTotal >= SIZE.agents + 1 + registered && milestonesKept >= 5 + milestonesAcked
for (const server of [bare, shipped]) server.stop()
for (const child of [hello.child, floor.child]) child.kill()
await Promise.all([bare.process.exited, shipped.process.exited, hello.child.exited, floor.child.exited])

/** Numbers the in-process writes across all runs, so every row they insert is new. */
let n = 0
/** Microseconds per operation of `path`'s database work in this process on `driver` (writes 32 to a transaction). */
function inProcess(path: Path, driver: FloorDriver): number {
  const db = openFloor(database, driver)
  const work = floorWork(db)
  const rounds = quick ? 20 : 100
  const once = () => {
    if (path.write) db.exec('BEGIN IMMEDIATE')
    for (let index = 0; index < 32; index++) path.work(work, n++)
    if (path.write) db.exec('COMMIT')
  }
  for (let round = 0; round < 5; round++) once()
  const started = performance.now()
  for (let round = 0; round < rounds; round++) once()
  const micros = ((performance.now() - started) * 1000) / (rounds * 32)
  db.close()
  return micros
}
const inProcessMicros = wanted.map((path) => ({
  bun: inProcess(path, 'bun'),
  libsql: inProcess(path, 'libsql'),
}))
rmSync(folder, { recursive: true, force: true })

const ratio = (a: WrkResult, b: WrkResult) => a.requestsPerSecond / b.requestsPerSecond
const helloRates = measured.map(({ hello }) => hello.requestsPerSecond).sort((a, b) => a - b)
const percent = (share: number) => `${Math.round(share * 100)}%`
const micros = (value: number) => (value < 10 ? value.toFixed(1) : formatCount(value))
const metAll = (row: Measured) =>
  ratio(row.bare, row.hello) >= row.path.goal &&
  keptShipped(row) >= shippedGoalOf(row.bare) &&
  keptOfFloor(row) >= (row.path.floorGoal ?? 0)
const rows = measured.map((row, index) => [
  row.path.label,
  formatCount(row.bare.requestsPerSecond),
  formatMs(row.bare.p50Ms),
  formatMs(row.bare.p99Ms),
  `${ratio(row.bare, row.hello).toFixed(3)} (>= ${row.path.goal})`,
  `${keptShipped(row).toFixed(2)} (${spread(row, keptShipped)}; ${micros(row.bare.cpuMicros)} / ${micros(row.shipped.cpuMicros)} µs); ${ratio(row.shipped, row.bare).toFixed(2)}`,
  `${capOf(row.bare).toFixed(2)} (>= ${shippedGoalOf(row.bare).toFixed(2)})`,
  `${formatCount(row.floor.requestsPerSecond)}; ${micros(row.floor.cpuMicros)}`,
  `${percent(row.bare.busy)} / ${percent(row.floor.busy)}`,
  `${keptOfFloor(row).toFixed(2)} (${spread(row, keptOfFloor)}); ${ratio(row.bare, row.floor).toFixed(2)}${row.path.floorGoal ? ` (>= ${row.path.floorGoal})` : ''}`,
  `${micros(inProcessMicros[index]?.bun ?? 0)} / ${micros(inProcessMicros[index]?.libsql ?? 0)}`,
  metAll(row) ? 'yes' : '**no**',
  row.bare.non2xx + row.shipped.non2xx + row.floor.non2xx,
])
const goals: Goal[] = measured.flatMap((row) => [
  {
    name: `${row.path.label}: ratio to hello world`,
    value: ratio(row.bare, row.hello).toFixed(3),
    target: `>= ${row.path.goal}`,
    met: ratio(row.bare, row.hello) >= row.path.goal,
  },
  {
    name: `${row.path.label}: as shipped / bare (server CPU per request)`,
    value: `${keptShipped(row).toFixed(2)} (${spread(row, keptShipped)})`,
    target: `>= ${shippedGoalOf(row.bare).toFixed(2)} (${SHIPPED_GOAL}, or Bun's cap ${capOf(row.bare).toFixed(2)} if lower)`,
    met: keptShipped(row) >= shippedGoalOf(row.bare),
  },
  ...(row.path.floorGoal
    ? [
        {
          name: `${row.path.label}: ratio to its floor (server CPU per request)`,
          value: `${keptOfFloor(row).toFixed(2)} (${spread(row, keptOfFloor)})`,
          target: `>= ${row.path.floorGoal}`,
          met: keptOfFloor(row) >= row.path.floorGoal,
        },
      ]
    : []),
])
goals.push({
  name: 'every acknowledged write found in the database',
  value: durable ? 'yes' : 'no',
  target: 'yes',
  met: durable,
})

const markdown = `## HTTP under load

\`wrk -t1 -c32 -d${seconds}s --latency\` on 127.0.0.1 against \`bun start\` (production mode, a file database seeded
with ${formatCount(SIZE.agents)} agents and ${formatCount(SIZE.tasks)} tasks). Each path is measured four ways, each after a 1 s
warm-up: an Elysia hello world in its own process (the ceiling; ${formatCount(helloRates[0] ?? 0)}–${formatCount(helloRates.at(-1) ?? 0)} req/s over the runs), then ${ROUNDS} rounds of
${turnSeconds} s runs of the three others in turns (bare, shipped, floor, then floor, shipped, bare, and again: each at the same
mean moment, and the writes grow their one database under each alike): the market
**bare** (\`LOG_LEVEL=off\`, no rate limits: the req/s, p50, p99 and ratio columns, means of its rounds), the market **as shipped**
(\`RATE_LIMITS=on\` with limits raised so nothing is refused, and \`LOG_LEVEL=info\`, a JSON line per request to
/dev/null), and its **floor**: \`bench/floor.ts\`, a bare Elysia route doing the least work the path's requirement needs
(\`bench/lib/floorWork.ts\` says why each piece: the rows its answer carries, a keyed write's SHA-256 of the bearer key
checked against the stored hash, the same rows written, ids and key digests random as the market makes them, writes
group-committed per turn with \`synchronous = FULL\`, temporary files in memory as the market keeps them) on
bun:sqlite statements prepared once, answering the rows as JSON. A registration's floor also does what its answer
needs: it reads the name from the same body, makes a random API key and pairing code, the key's SHA-256 and the
code's HMAC-SHA256 (what is kept), and answers both once (issue 41's goal for a registration is 0.06 of hello world).
The in-process column times that database work alone in this process, on
bun:sqlite and on libsql-js, writes 32 to a transaction. wrk and the servers share the machine's 2 cores.
Writes: ${formatCount(registered)} registrations and ${formatCount(milestonesAcked)} milestones were acknowledged; the database then held
${formatCount(agentsTotal)} agents and ${formatCount(milestonesKept)} milestones of the bench agent (${durable ? 'every acknowledged write present' : 'SOME ACKNOWLEDGED WRITES MISSING'}).

${table(
  [
    'path',
    'req/s',
    'p50',
    'p99',
    'ratio to hello (goal)',
    `as shipped / bare: CPU (min–max of ${ROUNDS} rounds; bare / shipped µs a request); req/s`,
    "Bun's cap (goal: >= min(0.9, cap))",
    'floor: req/s; CPU µs a request',
    'server busy (bare / floor)',
    `ratio to floor: CPU (min–max of ${ROUNDS} rounds); req/s (goal)`,
    'in-process µs (bun:sqlite / libsql-js)',
    'met',
    'non-2xx',
  ],
  rows,
)}

What the shipped features cost at the least, whatever the server does: a bare \`Bun.serve\` hello world
(\`bench/bunCosts.ts\`, median of 3 runs each, in turns) asking \`server.requestIP(request)\` (the client's address, which
every per-address rate limit needs), reading the caller's \`X-Request-Id\` (Bun then makes the request's whole header
list), adding one response header (the answer's \`X-Request-Id\`), or all three.

${table(
  [
    'Bun.serve hello world',
    'req/s',
    'ratio to plain',
    'µs added to a request (req/s)',
    'server CPU µs a request (added)',
  ],
  Object.entries(BUN_MODES).map(([mode, label]) => [
    label,
    formatCount(bunRate(mode)),
    (bunRate(mode) / bunRate('plain')).toFixed(2),
    mode === 'plain' ? '—' : bunMicros(mode).toFixed(2),
    `${bunMedian(mode, (run) => run.cpuMicros).toFixed(2)}${mode === 'plain' ? '' : ` (${bunCpuMicros(mode).toFixed(2)})`}`,
  ]),
)}

As shipped / bare and the ratio to the floor are judged by the servers' CPU per request (user + system, all threads,
from /proc, over all the rounds: the floor's µs over the bare market's): what each server spends on a request, which
the machine's drift moves far less than req/s (one-run req/s ratios to the floor moved 0.69-0.85 between two quiet
runs of one code; the req/s ratio is printed beside it, and each figure's lowest and highest round, so a verdict
whose rounds straddle its goal reads as not firm). The busy column is each server's CPU over the wall time of its
runs: a server wrk or a sync holds back (below about 100%) answers fewer req/s than its CPU per request allows.
All three of Bun's costs add ${bunCpuMicros('all').toFixed(2)} µs of CPU to a request whatever else it does: a row whose bare server
spends \`bare\` µs a request spends at least bare + ${bunCpuMicros('all').toFixed(2)} as shipped, so it keeps at most bare / (bare + ${bunCpuMicros('all').toFixed(2)}): its
**cap** in the table above (the cheapest bare row here, ${micros(cheapestBare?.cpuMicros ?? 0)} µs, ${cheapestBare ? capOf(cheapestBare).toFixed(2) : '—'}), and the row is judged against
the lower of 0.9 and its cap, before any log line is made or bucket spent.
`
finishSection({ title: 'HTTP under load', markdown, goals }, json)
