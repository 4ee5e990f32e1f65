/**
 * Side by side with the reference servers: the same paid skill sold by x402's own reference middleware and by
 * mppx's own server, and by agentmarket (`bun start`, production, a new file database), each in its own process on
 * 127.0.0.1, paid by the same clients on the same chains:
 *  - x402: `@x402/hono`'s paymentMiddleware with an in-process facilitator (`@x402/core` + `@x402/evm`'s `exact`
 *    scheme; bench/reference/x402Hono.ts) against agentmarket's per-skill x402 path, both settling on one anvil
 *    (automine) with the mock USDC at Base's address, both paid by `@x402/fetch`'s `wrapFetchWithPayment`;
 *  - MPP: mppx 0.11's `mppx/server` (tempo charge, its defaults; bench/reference/mppxServer.ts) against agentmarket's
 *    per-skill MPP path, on the tests' scripted Tempo node (mines each broadcast at once), both paid by mppx's
 *    client (`Mppx.create(...).fetch`, tempo charge, pull mode).
 * Each server gets CLIENTS clients looping the whole paid order (the 402, the client's signature, the paid request)
 * for SECONDS, in ROUNDS rounds taking the servers in turn, so the machine's drift hits each alike. The main figure is
 * the server process's CPU (all its threads, from /proc) per paid order; then paid orders/s and the paid request's
 * p50/p99 (the request carrying the payment, from send to the whole answer). Every answer must be paid, and the
 * chain must show each payment: the seller's USDC on anvil, the scripted node's mined transactions, agentmarket's
 * paid tasks.
 * Usage: bun bench/reference.ts [--quick] [--json PATH]   (progress on stderr)
 */
import { cpus } from 'node:os'
import { join } from 'node:path'
import { registerExactEvmScheme } from '@x402/evm/exact/client'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { Mppx, tempo } from 'mppx/client'
import { type Address, toHex } from 'viem'
import type { HDAccount } from 'viem/accounts'
import { type Anvil, startAnvil } from '../tests/support/anvil.ts'
import { freePort, runToEnd, type startMarketServer, waitForOk } from '../tests/support/process.ts'
import { type scriptedTempo, TEMPO_USDC_E, tempoPayer } from '../tests/support/tempo.ts'
import { clockTicks, cpuMs } from './lib/proc.ts'
import {
  finishSection,
  formatCount,
  formatMs,
  type Goal,
  percentile,
  sectionFlags,
  table,
} from './lib/section.ts'
import { tempoMarketSetup } from './lib/tempoMarket.ts'

const { quick, json } = sectionFlags()
const TITLE = 'Side by side with the reference servers'
/** Clients paying at once, each looping paid orders one after another. */
const CLIENTS = 8
/** Seconds each server is measured per round. */
const SECONDS = quick ? 1 : 5
const ROUNDS = quick ? 1 : 3
/** Paid orders per server before measuring, one at a time (loads the libraries, warms the JIT). */
const WARMUP = quick ? 2 : 40
/** Seconds each server's CPU is read at rest before the runs: what it spends with no request (timers, GC). */
const IDLE_SECONDS = quick ? 0.5 : 2
const PRICE = '0.01'
const PRICE_UNITS = 10_000n
const root = join(import.meta.dir, '..')
const t0 = performance.now()
const log = (line: string) =>
  process.stderr.write(`bench reference: ${((performance.now() - t0) / 1000).toFixed(1)} s: ${line}\n`)

/** A paid order's client: `pay(n)` makes order n and throws unless its answer is paid; `paidLatencies` grows. */
type Payer = { pay(n: number): Promise<void>; paidLatencies: number[] }
/** One server under test: its process and how to pay it; `settled()` reads what the chain (or the store) shows. */
type Target = {
  label: string
  protocol: 'x402' | 'MPP'
  pid: number
  payer: Payer
  settled(): Promise<number>
}
/** What a target measured: paid orders, seconds, server CPU ms, and the paid requests' latencies. */
type Tally = { orders: number; seconds: number; cpuMs: number; latencies: number[] }

/** How long one request of the clients may wait: a stalled server fails the section naming itself, never hangs it. */
const REQUEST_DEADLINE_MS = 30_000

/** `fetch(request)`, its answer and body bound by REQUEST_DEADLINE_MS; past it an error names `what` and the request. */
async function boundedFetch(request: Request, what: string): Promise<Response> {
  const signal = AbortSignal.timeout(REQUEST_DEADLINE_MS)
  try {
    const answer = await fetch(request, { signal })
    const body = await answer.arrayBuffer()
    return new Response(body, { status: answer.status, headers: answer.headers })
  } catch (error) {
    if (!signal.aborted) throw error
    const { pathname } = new URL(request.url)
    throw new Error(
      `${what}: no whole answer to ${request.method} ${pathname} in ${REQUEST_DEADLINE_MS / 1000} s`,
    )
  }
}

/** A fetch that times the requests carrying a payment (`isPaid` of their headers) into `latencies`; `what` names the server. */
function timingFetch(isPaid: (headers: Headers) => boolean, latencies: number[], what: string): typeof fetch {
  const timed = async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init)
    if (!isPaid(request.headers)) return boundedFetch(request, what)
    const started = performance.now()
    const answer = await boundedFetch(request, what)
    latencies.push(performance.now() - started)
    return answer
  }
  return timed as typeof fetch
}

/** A JSON order body, distinct per order (agentmarket treats the same unresolved body by one payer as one order). */
const orderInit = (n: number): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ buyer: 'bench', params: { q: 'reference', n } }),
})

/** Checks a paid order's answer: the status, the protocol's receipt header and, for agentmarket, a `paid` task. */
async function expectPaid(answer: Response, status: number, receiptHeader: string, what: string) {
  const text = await answer.text()
  if (answer.status !== status || !answer.headers.get(receiptHeader))
    throw new Error(`${what}: a paid order answered ${answer.status}: ${text.slice(0, 300)}`)
  if ((JSON.parse(text) as { status?: string }).status !== 'paid')
    throw new Error(`${what}: not paid: ${text.slice(0, 300)}`)
}

/** `@x402/fetch` paying `url` as `buyer` on Base (the anvil's chain id). */
function x402Payer(buyer: HDAccount, url: string, status: number, what: string): Payer {
  const paidLatencies: number[] = []
  const client = new x402Client()
  registerExactEvmScheme(client, { signer: buyer, networks: ['eip155:8453'] })
  const paying = wrapFetchWithPayment(
    timingFetch((headers) => headers.has('payment-signature'), paidLatencies, what),
    client,
  )
  return {
    paidLatencies,
    pay: async (n) => expectPaid(await paying(url, orderInit(n)), status, 'payment-response', what),
  }
}

/** mppx's client (tempo charge, pull mode) paying `url` on the scripted node at `rpc`. */
function mppPayer(node: ReturnType<typeof scriptedTempo>, url: string, status: number, what: string): Payer {
  const paidLatencies: number[] = []
  const buyer = Mppx.create({
    polyfill: false,
    fetch: timingFetch(
      (headers) => headers.get('authorization')?.startsWith('Payment ') ?? false,
      paidLatencies,
      what,
    ),
    methods: [tempo.charge({ account: tempoPayer(2), getClient: () => node.client('buyer'), mode: 'pull' })],
  })
  return {
    paidLatencies,
    pay: async (n) => expectPaid(await buyer.fetch(url, orderInit(n)), status, 'payment-receipt', what),
  }
}

let nextOrder = 0
/** CLIENTS clients paying `target` for `seconds`: its paid orders, the server's CPU and the paid latencies. */
async function measure(target: Target, seconds: number): Promise<Tally> {
  const latenciesBefore = target.payer.paidLatencies.length
  let orders = 0
  const cpuBefore = cpuMs(target.pid)
  const started = performance.now()
  const deadline = started + seconds * 1000
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < deadline) {
        await target.payer.pay(nextOrder++)
        orders++
      }
    }),
  )
  const elapsed = (performance.now() - started) / 1000
  return {
    orders,
    seconds: elapsed,
    cpuMs: cpuMs(target.pid) - cpuBefore,
    latencies: target.payer.paidLatencies.slice(latenciesBefore),
  }
}

// --- The chains --------------------------------------------------------------------------------------------------
const children: ReturnType<typeof Bun.spawn>[] = []
let anvil: Anvil | null = null
let market: Awaited<ReturnType<typeof startMarketServer>> | null = null
const tempoMarket = await tempoMarketSetup('reference')
const { node, rpc } = tempoMarket
let markdown = ''
const goals: Goal[] = []

/** Starts a reference server script with `env` and waits for its /health. */
async function startReference(script: string, env: Record<string, string>) {
  const port = freePort()
  const child = Bun.spawn(['bun', script], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', PORT: String(port), ...env },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  children.push(child)
  await waitForOk(`http://127.0.0.1:${port}/health`, child)
  return { base: `http://127.0.0.1:${port}`, pid: child.pid }
}

try {
  anvil = await startAnvil()
  await anvil.installUsdc()
  const [, buyer, marketSettler, referenceSettler, marketSeller, referenceSeller] = anvil.accounts
  if (!buyer || !marketSettler || !referenceSettler || !marketSeller || !referenceSeller)
    throw new Error('anvil has too few accounts')
  await anvil.mintUsdc(buyer.address, 10n ** 15n)
  const keyOf = (account: HDAccount) => toHex(account.getHdKey().privateKey ?? new Uint8Array())

  // --- The servers ---------------------------------------------------------------------------------------------
  log('starting agentmarket (bun start) and the two reference servers')
  const mppSeller = tempoPayer(1).address
  const mppReferenceSeller = tempoPayer(3).address
  const started = await Promise.all([
    tempoMarket.startMarket({
      CHAIN_RPC_URL: anvil.rpcUrl,
      MIN_CONFIRMATIONS: '1',
      X402_SETTLER_KEY: keyOf(marketSettler),
    }),
    startReference('bench/reference/x402Hono.ts', {
      RPC_URL: anvil.rpcUrl,
      SETTLER_KEY: keyOf(referenceSettler),
      PAY_TO: referenceSeller.address,
      PRICE,
    }),
    startReference('bench/reference/mppxServer.ts', {
      TEMPO_RPC_URL: rpc.url,
      PAY_TO: mppReferenceSeller,
      PRICE,
      CURRENCY: TEMPO_USDC_E,
    }),
  ])
  market = started[0]
  const [, x402Reference, mppReference] = started
  const marketBase = market.base

  /** Registers agentmarket seller `name` of the purchasable skill `summary` at PRICE with `wallet`; its API key. */
  const registerSeller = async (name: string, wallet: Address) => {
    const json = { 'content-type': 'application/json' }
    const registered = await fetch(`${marketBase}/api/agents/register`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ name, skills: [{ name: 'Summary', type: 'purchasable', price: PRICE }] }),
    })
    if (!registered.ok) throw new Error(`register ${name}: ${registered.status}`)
    const { apiKey } = (await registered.json()) as { apiKey: string }
    const put = await fetch(`${marketBase}/api/agents/${name}`, {
      method: 'PUT',
      headers: { ...json, authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ walletAddress: wallet }),
    })
    if (!put.ok) throw new Error(`wallet of ${name}: ${put.status}`)
    return apiKey
  }
  /** How many paid tasks agentmarket seller `name` holds. */
  const paidTasks = async (name: string, key: string) => {
    const answer = await fetch(`${marketBase}/api/agents/${name}/tasks?status=paid&limit=1`, {
      headers: { authorization: `Bearer ${key}` },
    })
    if (answer.status !== 200) throw new Error(`task list of ${name}: ${answer.status}`)
    return ((await answer.json()) as { total: number }).total
  }
  const x402Key = await registerSeller('ref-x402', marketSeller.address)
  const mppKey = await registerSeller('ref-mpp', mppSeller)
  const usdcUnits = async (address: Address) => (await anvil?.usdcOf(address)) ?? 0n
  const minedTo = (recipient: Address) => () =>
    Promise.resolve(
      node
        .mined()
        .filter((hash) =>
          node
            .receipt(hash)
            ?.logs.some((entry) => entry.topics[2]?.endsWith(recipient.slice(2).toLowerCase())),
        ).length,
    )
  const marketPid = market.process.pid
  const targets: Target[] = [
    {
      label: 'x402 reference: `@x402/hono` + in-process facilitator',
      protocol: 'x402',
      pid: x402Reference.pid,
      payer: x402Payer(buyer, `${x402Reference.base}/skill`, 200, 'x402 reference'),
      settled: async () => Number((await usdcUnits(referenceSeller.address)) / PRICE_UNITS),
    },
    {
      label: "agentmarket's per-skill x402 path",
      protocol: 'x402',
      pid: marketPid,
      payer: x402Payer(buyer, `${marketBase}/api/agents/ref-x402/tasks/summary`, 201, 'agentmarket x402'),
      settled: async () => {
        const units = Number((await usdcUnits(marketSeller.address)) / PRICE_UNITS)
        const tasks = await paidTasks('ref-x402', x402Key)
        if (units !== tasks)
          throw new Error(`agentmarket x402: ${units} payments on chain, ${tasks} paid tasks`)
        return tasks
      },
    },
    {
      label: "MPP reference: mppx 0.11's `mppx/server`",
      protocol: 'MPP',
      pid: mppReference.pid,
      payer: mppPayer(node, `${mppReference.base}/skill`, 200, 'mppx reference'),
      settled: minedTo(mppReferenceSeller),
    },
    {
      label: "agentmarket's per-skill MPP path",
      protocol: 'MPP',
      pid: marketPid,
      payer: mppPayer(node, `${marketBase}/api/agents/ref-mpp/tasks/summary`, 201, 'agentmarket MPP'),
      settled: async () => {
        const mined = await minedTo(mppSeller)()
        const tasks = await paidTasks('ref-mpp', mppKey)
        if (mined !== tasks) throw new Error(`agentmarket MPP: ${mined} transfers mined, ${tasks} paid tasks`)
        return tasks
      },
    },
  ]

  log(`warm-up: ${WARMUP} paid orders per server, one at a time`)
  for (const target of targets) for (let n = 0; n < WARMUP; n++) await target.payer.pay(nextOrder++)
  // CPU at rest, all servers read over the same seconds: background work that every paid order's figure includes.
  const pids = [...new Set(targets.map((target) => target.pid))]
  const idleBefore = pids.map(cpuMs)
  await Bun.sleep(IDLE_SECONDS * 1000)
  const idlePerSecond = new Map(
    pids.map((pid, index) => [pid, (cpuMs(pid) - (idleBefore[index] ?? 0)) / IDLE_SECONDS]),
  )

  const tallies = targets.map(() => ({ orders: 0, seconds: 0, cpuMs: 0, latencies: [] as number[] }))
  for (let round = 0; round < ROUNDS; round++) {
    // Each round takes the servers in turn, starting one further along, so no server always follows the same one.
    for (let step = 0; step < targets.length; step++) {
      const index = (round + step) % targets.length
      const target = targets[index] as Target
      const tally = tallies[index] as Tally
      log(`round ${round + 1}/${ROUNDS}: ${target.label}, ${CLIENTS} clients, ${SECONDS} s`)
      const measured = await measure(target, SECONDS)
      tally.orders += measured.orders
      tally.seconds += measured.seconds
      tally.cpuMs += measured.cpuMs
      tally.latencies.push(...measured.latencies)
    }
  }
  // Every paid order the clients were answered is on the chain (and, for agentmarket, a paid task).
  for (const [index, target] of targets.entries()) {
    const answered = WARMUP + (tallies[index] as Tally).orders
    const settled = await target.settled()
    if (settled !== answered)
      throw new Error(`${target.label}: ${answered} paid answers, ${settled} payments settled`)
  }

  const cpuPer = (tally: Tally) => tally.cpuMs / tally.orders
  const perSecond = (tally: Tally) => tally.orders / tally.seconds
  const rows = targets.map((target, index) => {
    const tally = tallies[index] as Tally
    return [
      target.label,
      formatMs(cpuPer(tally)),
      formatCount(tally.orders),
      formatCount(perSecond(tally)),
      formatMs(percentile(tally.latencies, 0.5)),
      formatMs(percentile(tally.latencies, 0.99)),
      formatMs(idlePerSecond.get(target.pid) ?? 0),
    ]
  })
  const compare = (protocol: 'x402' | 'MPP', reference: Tally, ours: Tally) => {
    const cpuRatio = cpuPer(ours) / cpuPer(reference)
    const speedRatio = perSecond(ours) / perSecond(reference)
    const beside = 'agentmarket also records the task, holds the budgets and queues the webhooks'
    goals.push(
      {
        name: `paid ${protocol} order: agentmarket's server CPU / the reference's (${beside})`,
        value: `${cpuRatio.toFixed(2)} (${formatMs(cpuPer(ours))} vs ${formatMs(cpuPer(reference))})`,
        target: '<= 1.0',
        met: cpuRatio <= 1,
      },
      {
        name: `paid ${protocol} order: agentmarket's throughput / the reference's, ${CLIENTS} clients (${beside})`,
        value: `${speedRatio.toFixed(2)} (${formatCount(perSecond(ours))} vs ${formatCount(perSecond(reference))}/s)`,
        target: '>= 1.0',
        met: speedRatio >= 1,
      },
    )
    return { cpuRatio, speedRatio }
  }
  const [x402Ref, x402Ours, mppRef, mppOurs] = tallies as [Tally, Tally, Tally, Tally]
  const x402 = compare('x402', x402Ref, x402Ours)
  const mpp = compare('MPP', mppRef, mppOurs)
  const load = (await runToEnd(['uptime'])).stdout.trim()

  markdown = `## ${TITLE}

The same 0.01 USDC skill sold by each protocol's own reference server and by agentmarket (\`bun start\`, production,
a new file database, one confirmation), each in its own process on 127.0.0.1, paid by the same client:
\`@x402/fetch\` (\`wrapFetchWithPayment\`, \`@x402/evm\`'s exact scheme) for x402, settled on one anvil (automine, the
mock USDC at Base's address; each server settles from its own account), and mppx's client (tempo charge, pull mode)
for MPP, on the tests' scripted Tempo node over HTTP (each broadcast mined at once): the chains answer at once, so
the servers' own work decides. The x402 reference is \`@x402/hono\` 2.27.0's \`paymentMiddleware\` with
\`@x402/core\`'s \`x402Facilitator\` and \`@x402/evm\`'s exact scheme in its process (bench/reference/x402Hono.ts: it
verifies, runs the route, settles and waits for the receipt, as agentmarket does); the MPP reference is mppx 0.11's
\`mppx/server\` with its default tempo charge (replay store in memory; bench/reference/mppxServer.ts).

${CLIENTS} clients each loop the whole paid order (the 402, the signature, the paid request) for ${SECONDS} s per
server per round, ${ROUNDS} round${ROUNDS > 1 ? 's' : ''} taking the servers in turn after ${WARMUP} paid orders each. Server CPU is the
server process's (all its threads, from \`/proc\`) over the paid orders, their 402s included; p50/p99 are the
paid request's (the one carrying the payment). Every answer was paid (200, or 201 with a \`paid\` task, with its
\`PAYMENT-RESPONSE\` or \`Payment-Receipt\`), and afterwards the chain held exactly one payment per answer (the
seller's USDC on anvil, transfers mined by the scripted node) and agentmarket one paid task per payment. The
clients, the scripted node and anvil share the machine's ${cpus().length} cores with the servers; load: \`${load}\`.

${table(['server', 'server CPU / paid order', 'paid orders', 'paid orders/s', 'p50', 'p99', 'server CPU / s at rest'], rows)}

CPU at rest is each server process's over ${IDLE_SECONDS} s with no request, after the warm-up (agentmarket's one
process serves both of its rows: its timers re-check payments, deliver webhooks and expire tasks); at
${CLIENTS} clients it is a small part of each paid order's figure. The clock ticks of \`/proc\` are
${formatMs(1000 / clockTicks)}, far below each row's total.

agentmarket uses ${x402.cpuRatio.toFixed(2)}x the x402 reference's CPU per paid order and makes ${x402.speedRatio.toFixed(2)}x its
throughput; ${mpp.cpuRatio.toFixed(2)}x mppx's CPU and ${mpp.speedRatio.toFixed(2)}x its throughput for MPP. Beside the
payment, each of agentmarket's paid orders records a task (SQLite, durable before the answer), claims the
authorization or credential once across nodes, checks the buyer's and the seller's budgets, and queues the task's
webhook events; the reference servers keep their replay state in memory and record nothing. Where an x402 paid
order's CPU goes, part by part, ours beside the reference's (its Hono app timed in one process with ours), and the
floor of the requirement (the reference's CPU plus the least durable writes): \`bun bench/x402Profile.ts\` and
bench/CHANGES.md ("the x402 paid order part by part").

Both x402 settlers poll for receipts every 250 ms: agentmarket's settlement client by its default (\`receiptPollMs\`,
core's viemX402.ts), the reference's viem client set so. viem's own default for a chain defined without a block time
is 4 s, and anvil can answer a send a moment before it stores the block: a wait that misses the receipt then lasts
until the next poll (with it, agentmarket's x402 p99 was 4.4 s; bench/CHANGES.md).
`
} finally {
  market?.stop()
  for (const child of children) child.kill()
  await Promise.all([market?.process.exited, ...children.map((child) => child.exited)])
  anvil?.stop()
  await tempoMarket.stop()
}

finishSection({ title: TITLE, markdown, goals }, json)
