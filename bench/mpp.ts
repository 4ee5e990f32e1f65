/**
 * Machine payments (MPP) against a real `bun start` (NODE_ENV=production, a new file database), whose Tempo RPC is
 * the scripted node of the tests served over HTTP on 127.0.0.1:
 *  1. 402 challenges per second: wrk (1 thread, 32 connections, bench/wrk/post-json.lua) POSTs an order without a
 *     credential for a bounded time; every answer must be a 402.
 *  2. Paid requests per second: K credentials made with the real mppx client (pull mode), one per distinct order
 *     body, sent one at a time and then (a fresh K) 16 at a time; every answer must be 201 with a Payment-Receipt,
 *     and each seller must hold exactly K paid tasks afterwards. Making the credentials is timed apart.
 * Usage: bun bench/mpp.ts [--quick] [--json PATH]   (markdown on stdout, progress on stderr)
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { Mppx, tempo } from 'mppx/client'
import { runToEnd, startMarketServer } from '../tests/support/process.ts'
import { scriptedTempo, tempoPayer } from '../tests/support/tempo.ts'

const TITLE = 'Machine payments (MPP)'
const quick = process.argv.includes('--quick')
const jsonFlag = process.argv.indexOf('--json')
const jsonPath = jsonFlag > 0 ? process.argv[jsonFlag + 1] : undefined
if (jsonFlag > 0 && !jsonPath) throw new Error('--json needs a path')

/** wrk's measured run, after a warm-up run of WARMUP_SECONDS. */
const WRK_SECONDS = quick ? 2 : 10
const WARMUP_SECONDS = 1
const WRK_CONNECTIONS = 32
/** Paid requests per mode (each mode has its own seller and its own K credentials). */
const K = quick ? 50 : 500
const CONCURRENCY = 16
const SKILLS = [{ name: 'Summary', type: 'purchasable', price: '0.01' }]
const SELLER_WALLET = tempoPayer(1).address
const LUA = resolve(import.meta.dir, 'wrk/post-json.lua')

const log = (line: string) => process.stderr.write(`[bench mpp] ${line}\n`)
const wallStarted = performance.now()

// --- Helpers ---------------------------------------------------------------------------------------------------
const clockTicks = Number((await runToEnd(['getconf', 'CLK_TCK'])).stdout.trim()) || 100

/** CPU milliseconds (user + system) a process has used so far, from /proc. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // Fields 14 and 15 of stat (utime, stime) are 12 and 13 after the command name.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks
}

/** The nearest-rank percentile `p` (0-100) of ascending `sorted`. */
function percentile(sorted: number[], p: number): number {
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN
}

const ms = (value: number) => `${value < 10 ? value.toFixed(2) : value.toFixed(1)} ms`
const whole = (value: number) => Math.round(value).toLocaleString('en')

const json = (method: string, body: unknown, headers: Record<string, string> = {}) => ({
  method,
  headers: { 'content-type': 'application/json', ...headers },
  body: typeof body === 'string' ? body : JSON.stringify(body),
})

// --- The server, as a user starts it -----------------------------------------------------------------------------
const node = scriptedTempo()
const rpc = await node.serve()
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-bench-mpp-'))
const server = await startMarketServer({
  NODE_ENV: 'production',
  HOME: folder,
  DATABASE_URL: `file:${join(folder, 'market.db')}`,
  TEMPO_RPC_URL: rpc.url,
})
const serverPid = server.process.pid
const base = server.base

/** Registers a seller of the purchasable skill `summary` with a wallet; returns its API key. */
async function registerSeller(name: string): Promise<string> {
  const registered = await fetch(`${base}/api/agents/register`, json('POST', { name, skills: SKILLS }))
  if (!registered.ok) throw new Error(`register ${name}: ${registered.status}`)
  const { apiKey } = (await registered.json()) as { apiKey: string }
  const wallet = await fetch(
    `${base}/api/agents/${name}`,
    json('PUT', { walletAddress: SELLER_WALLET }, { authorization: `Bearer ${apiKey}` }),
  )
  if (wallet.status !== 200) throw new Error(`wallet of ${name}: ${wallet.status}`)
  return apiKey
}

/** How many tasks of `status` the seller holds, read with its key. */
async function taskTotal(name: string, key: string, status: string): Promise<number> {
  const answer = await fetch(`${base}/api/agents/${name}/tasks?status=${status}&limit=1`, {
    headers: { authorization: `Bearer ${key}` },
  })
  if (answer.status !== 200) throw new Error(`task list of ${name}: ${answer.status}`)
  return ((await answer.json()) as { total: number }).total
}

const orderUrl = (seller: string) => `${base}/api/agents/${seller}/tasks/summary`

// --- 1. 402 challenges under wrk -------------------------------------------------------------------------------
type WrkRun = {
  requests: number
  seconds: number
  perSecond: number
  p50: number
  p99: number
  non2xx: number
  socketErrors: string | null
  statuses: Record<string, number>
}

/** A wrk latency like "1.23ms", "845.00us" or "1.02s", in milliseconds. */
function wrkMs(text: string | undefined): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(text ?? '')
  if (!match) throw new Error(`wrk latency not understood: ${text}`)
  const factor = { us: 0.001, ms: 1, s: 1000, m: 60_000 }[match[2] as 'us' | 'ms' | 's' | 'm']
  return Number(match[1]) * factor
}

async function runWrk(url: string, seconds: number): Promise<WrkRun> {
  const run = await runToEnd([
    'wrk',
    '-t1',
    `-c${WRK_CONNECTIONS}`,
    `-d${seconds}s`,
    '--timeout',
    '5s',
    '--latency',
    '-s',
    LUA,
    url,
  ])
  if (run.exitCode !== 0) throw new Error(`wrk failed (${run.exitCode}): ${run.stderr}${run.stdout}`)
  const out = run.stdout
  const total = /(\d+) requests in ([\d.]+)(ms|s|m),/.exec(out)
  if (!total) throw new Error(`wrk output not understood:\n${out}`)
  const statuses: Record<string, number> = {}
  for (const pair of /^statuses (.*)$/m.exec(out)?.[1]?.trim().split(/\s+/) ?? []) {
    const [status = '', count = '0'] = pair.split('=')
    if (status) statuses[status] = Number(count)
  }
  return {
    requests: Number(total[1]),
    seconds: wrkMs(`${total[2]}${total[3]}`) / 1000,
    perSecond: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]),
    p50: wrkMs(/^\s+50%\s+(\S+)/m.exec(out)?.[1]),
    p99: wrkMs(/^\s+99%\s+(\S+)/m.exec(out)?.[1]),
    non2xx: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0),
    socketErrors: /Socket errors:.*/.exec(out)?.[0] ?? null,
    statuses,
  }
}

// --- 2. Paid requests ----------------------------------------------------------------------------------------------
const buyer = Mppx.create({
  polyfill: false,
  methods: [tempo.charge({ account: tempoPayer(2), getClient: () => node.client('buyer'), mode: 'pull' })],
})

type PaidOrder = { body: string; credential: string }

/**
 * `count` credentials for `seller`, one per distinct order body: a 402, then mppx's createCredential. Times each
 * credential whole (402 round trip included) and createCredential alone.
 */
async function prepareCredentials(seller: string, label: string, count: number) {
  const orders: PaidOrder[] = []
  const each: number[] = []
  const signing: number[] = []
  for (let index = 0; index < count; index++) {
    const body = JSON.stringify({ buyer: 'bench', params: { run: label, n: index } })
    const started = performance.now()
    const challenge = await fetch(orderUrl(seller), json('POST', body))
    if (challenge.status !== 402) throw new Error(`challenge ${index}: ${challenge.status}`)
    const created = performance.now()
    const credential = await buyer.createCredential(challenge)
    const done = performance.now()
    each.push(done - started)
    signing.push(done - created)
    orders.push({ body, credential })
  }
  return { orders, each, signing }
}

/** Sends one paid order; returns its latency after checking it is a 201 `paid` task with a Payment-Receipt. */
async function pay(seller: string, order: PaidOrder): Promise<number> {
  const started = performance.now()
  const answer = await fetch(orderUrl(seller), json('POST', order.body, { authorization: order.credential }))
  const text = await answer.text()
  const elapsed = performance.now() - started
  if (answer.status !== 201) throw new Error(`paid order answered ${answer.status}: ${text.slice(0, 300)}`)
  if (!answer.headers.get('payment-receipt')) throw new Error('paid order has no Payment-Receipt')
  if ((JSON.parse(text) as { status?: string }).status !== 'paid') throw new Error(`task not paid: ${text}`)
  return elapsed
}

type PaidRun = {
  seconds: number
  latencies: number[]
  serverCpuMs: number
  rpcCalls: Map<string, number>
}

/** Sends every order with `concurrency` in flight, then checks the seller holds exactly orders.length paid tasks. */
async function payAll(
  seller: string,
  key: string,
  orders: PaidOrder[],
  concurrency: number,
): Promise<PaidRun> {
  node.calls.length = 0
  const latencies: number[] = []
  let next = 0
  const cpuBefore = cpuMs(serverPid)
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let index = next++; index < orders.length; index = next++) {
        const order = orders[index]
        if (order) latencies.push(await pay(seller, order))
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  const serverCpuMs = cpuMs(serverPid) - cpuBefore
  const rpcCalls = new Map<string, number>()
  for (const call of node.calls)
    if (call.side === 'http') rpcCalls.set(call.method, (rpcCalls.get(call.method) ?? 0) + 1)
  const paid = await taskTotal(seller, key, 'paid')
  const all = await taskTotal(seller, key, 'all')
  if (paid !== orders.length || all !== orders.length)
    throw new Error(`${seller} holds ${paid} paid tasks (${all} in all), expected ${orders.length}`)
  latencies.sort((a, b) => a - b)
  return { seconds, latencies, serverCpuMs, rpcCalls }
}

// --- The run ---------------------------------------------------------------------------------------------------
let markdown = ''
try {
  const keys = {
    warmup: await registerSeller('bench-warmup'),
    serial: await registerSeller('bench-serial'),
    concurrent: await registerSeller('bench-concurrent'),
  }

  // Warm-up: the first paid request loads mppx and viem's Tempo chain; wrk warms the challenge path.
  log(`warm-up: 3 paid orders and ${WARMUP_SECONDS} s of wrk`)
  const warm = await prepareCredentials('bench-warmup', 'warmup', 3)
  await payAll('bench-warmup', keys.warmup, warm.orders, 1)
  await runWrk(orderUrl('bench-warmup'), WARMUP_SECONDS)

  log(`402 challenges: wrk -t1 -c${WRK_CONNECTIONS} -d${WRK_SECONDS}s`)
  const cpuBefore = cpuMs(serverPid)
  const challenges = await runWrk(orderUrl('bench-warmup'), WRK_SECONDS)
  const challengeCpuMs = cpuMs(serverPid) - cpuBefore
  const only402 =
    challenges.requests > 0 &&
    challenges.non2xx === challenges.requests &&
    challenges.statuses['402'] === challenges.requests &&
    Object.keys(challenges.statuses).length === 1
  if (!only402)
    throw new Error(
      `not every answer was a 402: ${challenges.requests} requests, ${challenges.non2xx} non-2xx, ` +
        `statuses ${JSON.stringify(challenges.statuses)}`,
    )

  log(`paid one at a time: ${K} credentials, then ${K} requests`)
  const serialPrep = await prepareCredentials('bench-serial', 'serial', K)
  const serial = await payAll('bench-serial', keys.serial, serialPrep.orders, 1)
  log(`paid ${CONCURRENCY} at a time: ${K} credentials, then ${K} requests`)
  const concurrentPrep = await prepareCredentials('bench-concurrent', 'concurrent', K)
  const concurrent = await payAll('bench-concurrent', keys.concurrent, concurrentPrep.orders, CONCURRENCY)

  const paidRow = (label: string, run: PaidRun) =>
    `| ${label} | ${whole(run.latencies.length)} | ${whole(run.latencies.length / run.seconds)} | ` +
    `${ms(percentile(run.latencies, 50))} | ${ms(percentile(run.latencies, 99))} | ` +
    `${ms(run.serverCpuMs / run.latencies.length)} | all 201 with Payment-Receipt; ${run.latencies.length} paid tasks |`
  const each = [...serialPrep.each, ...concurrentPrep.each].sort((a, b) => a - b)
  const signing = [...serialPrep.signing, ...concurrentPrep.signing].sort((a, b) => a - b)
  const prepSeconds = each.reduce((sum, value) => sum + value, 0) / 1000
  const rpcPerPaid = [...concurrent.rpcCalls]
    .map(([method, count]) => `${method} ×${(count / concurrent.latencies.length).toFixed(1)}`)
    .join(', ')

  markdown = `## ${TITLE}

A real \`bun start\` (\`NODE_ENV=production\`, new file database) sells a 0.01 USDC.e skill; its Tempo RPC is the
tests' scripted node over HTTP on 127.0.0.1, which mines each broadcast at once, so the figures are the server's
own cost, not the chain's. 402 challenges: \`wrk -t1 -c${WRK_CONNECTIONS} -d${WRK_SECONDS}s --latency\` POSTs an
order without a credential (after a ${WARMUP_SECONDS} s warm-up); paid: per mode, ${whole(K)} credentials made
beforehand with the real mppx client (tempo charge, pull mode, one per distinct order body) are sent to their own
seller one at a time, then ${CONCURRENCY} at a time. Server CPU comes from \`/proc\`; wrk, the server and this
script (client and scripted node) share the machine's cores.

| measurement | requests | req/s | p50 | p99 | server CPU / request | checked |
|---|---:|---:|---:|---:|---:|---|
| 402 challenge, no credential (wrk, ${WRK_CONNECTIONS} connections) | ${whole(challenges.requests)} | ${whole(challenges.perSecond)} | ${ms(challenges.p50)} | ${ms(challenges.p99)} | ${ms(challengeCpuMs / challenges.requests)} | all 402 |
${paidRow('paid order, one at a time', serial)}
${paidRow(`paid order, ${CONCURRENCY} concurrent`, concurrent)}
| making a credential, one at a time (client: 402 round trip + mppx \`createCredential\`) | ${whole(each.length)} | ${whole(each.length / prepSeconds)} | ${ms(percentile(each, 50))} | ${ms(percentile(each, 99))} | — | client side, not server throughput |

Making the ${whole(each.length)} credentials took ${prepSeconds.toFixed(1)} s (\`createCredential\` alone: p50
${ms(percentile(signing, 50))}, p99 ${ms(percentile(signing, 99))}). Each paid request made these JSON-RPC calls to
the Tempo node: ${rpcPerPaid}.
`
} finally {
  server.stop()
  await server.process.exited
  await rpc.stop()
  rmSync(folder, { recursive: true, force: true })
}

console.log(markdown)
if (jsonPath) writeFileSync(jsonPath, `${JSON.stringify({ title: TITLE, markdown, goals: [] }, null, 2)}\n`)
log(`done in ${((performance.now() - wallStarted) / 1000).toFixed(1)} s`)
