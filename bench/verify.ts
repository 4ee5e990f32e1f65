/**
 * Measures payment verification against a real anvil: 1,000 mined USDC transfers verified (a) in one
 * verifyPayments call, (b) one call at a time, (c) as 1,000 single-check calls launched together through the
 * same batching client. Counts the HTTP requests and JSON-RPC calls each mode sends and the CPU time Bun and
 * anvil spend; every run asserts that all 1,000 verdicts are ok.
 * Usage: bun bench/verify.ts [--runs N]   (writes bench/results/verify.md)
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { totalmem } from 'node:os'
import { join, resolve } from 'node:path'
import { type Address, encodeFunctionData, type Hex, isAddressEqual, keccak256 } from 'viem'
import { viemChain } from '../packages/core/src/adapters/viemChain.ts'
import { type PaymentCheck, type Verdict, verifyPayments } from '../packages/core/src/payments/Verifier.ts'
import type { ChainReader } from '../packages/core/src/ports/Chain.ts'
import { startAnvil, USDC_ABI, USDC_ADDRESS } from '../tests/support/anvil.ts'
import { runToEnd } from '../tests/support/process.ts'

const root = resolve(import.meta.dir, '..')
const runsFlag = process.argv.indexOf('--runs')
/** Runs of the fast modes; the one-at-a-time mode, ~2 s a run, runs ceil(runs / 5) times. */
const runs = runsFlag > 0 ? Number(process.argv[runsFlag + 1]) : 15
const sequentialRuns = Math.ceil(runs / 5)
const TRANSFERS = 1_000
const BUYERS = 4
const CONFIRMATIONS = 3
const count = TRANSFERS.toLocaleString('en')

// --- The machine -------------------------------------------------------------------------------------------
const nproc = (await runToEnd(['nproc'])).stdout.trim()
const cpuModel = /model name\s*:\s*(.+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? 'unknown'
const anvilVersion = (await runToEnd([join(root, 'node_modules/.bin/anvil'), '--version'])).stdout
  .split('\n')[0]
  ?.replace('anvil Version:', 'anvil')
  .trim()
const clockTicks = Number((await runToEnd(['getconf', 'CLK_TCK'])).stdout.trim()) || 100

// --- Setup: 1,000 real transfers ---------------------------------------------------------------------------
const setupStarted = performance.now()
const anvil = await startAnvil()
process.once('exit', () => anvil.stop())
await anvil.installUsdc()
const buyers = anvil.accounts.slice(1, 1 + BUYERS)
const seller = anvil.accounts[9]?.address
if (buyers.length !== BUYERS || !seller) throw new Error('missing anvil accounts')
for (const buyer of buyers) await anvil.mintUsdc(buyer.address, 10n ** 12n)

/** One JSON-RPC batch straight to anvil; throws on any error answer. */
async function rpcBatch(calls: { method: string; params: unknown[] }[]): Promise<unknown[]> {
  const response = await fetch(anvil.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(calls.map((call, id) => ({ jsonrpc: '2.0', id, ...call }))),
  })
  const answers = (await response.json()) as { id: number; result?: unknown; error?: { message: string } }[]
  answers.sort((a, b) => a.id - b.id)
  const failed = answers.find((answer) => answer.error)
  if (failed) throw new Error(`${calls[failed.id]?.method} failed: ${failed.error?.message}`)
  return answers.map((answer) => answer.result)
}

// Signed locally with explicit nonce, gas and fees: no estimate or nonce round trip per transaction.
const nonces = (await rpcBatch(
  buyers.map((buyer) => ({ method: 'eth_getTransactionCount', params: [buyer.address, 'latest'] })),
)) as Hex[]
const signStarted = performance.now()
const transfers: { buyer: Address; amount: bigint; raw: Hex; hash: Hex }[] = []
for (let index = 0; index < TRANSFERS; index++) {
  const buyer = buyers[index % BUYERS]
  const nonce = nonces[index % BUYERS]
  if (!buyer || !nonce) throw new Error('missing buyer')
  const amount = 10_000n + BigInt(index) * 137n // every amount differs
  const raw = await buyer.signTransaction({
    chainId: 8453,
    type: 'eip1559',
    to: USDC_ADDRESS,
    data: encodeFunctionData({ abi: USDC_ABI, functionName: 'transfer', args: [seller, amount] }),
    nonce: Number(BigInt(nonce)) + Math.floor(index / BUYERS),
    gas: 100_000n,
    maxFeePerGas: 100_000_000_000n,
    maxPriorityFeePerGas: 1_000_000_000n,
  })
  transfers.push({ buyer: buyer.address, amount, raw, hash: keccak256(raw) })
}
const signMs = performance.now() - signStarted

// Automine off: all 1,000 enter the pool in one HTTP request, then blocks are mined until the pool is empty.
await anvil.testClient.setAutomine(false)
const sent = (await rpcBatch(
  transfers.map(({ raw }) => ({ method: 'eth_sendRawTransaction', params: [raw] })),
)) as Hex[]
sent.forEach((hash, index) => {
  if (hash !== transfers[index]?.hash) throw new Error(`transaction ${index} answered ${hash}`)
})
let mineCalls = 0
for (;;) {
  const pool = await anvil.testClient.getTxpoolStatus()
  if (pool.pending === 0 && pool.queued === 0) break
  if (mineCalls >= 100) throw new Error(`pool still holds ${pool.pending} + ${pool.queued} transactions`)
  await anvil.mine(1)
  mineCalls++
}
await anvil.testClient.setAutomine(true)
const receipts = (await rpcBatch(
  transfers.map(({ hash }) => ({ method: 'eth_getTransactionReceipt', params: [hash] })),
)) as ({ status: Hex; blockNumber: Hex } | null)[]
const failedTransfers = receipts.filter((receipt) => receipt?.status !== '0x1').length
if (failedTransfers > 0) throw new Error(`${failedTransfers} of ${count} transfers not mined successfully`)
/** Transfers per block, in block order. */
const perBlock = new Map<string, number>()
for (const receipt of receipts)
  if (receipt) perBlock.set(receipt.blockNumber, (perBlock.get(receipt.blockNumber) ?? 0) + 1)
await anvil.mine(CONFIRMATIONS)
const setupMs = performance.now() - setupStarted

const checks: PaymentCheck[] = transfers.map(({ buyer, amount, hash }) => ({
  txHash: hash,
  kind: 'transfer',
  expected: {
    token: USDC_ADDRESS,
    recipient: seller,
    minAmount: amount,
    sender: buyer,
    minConfirmations: CONFIRMATIONS,
  },
}))

/** Throws unless every verdict is ok with its own transfer's amount and sender. */
function assertAllOk(verdicts: Verdict[]) {
  if (verdicts.length !== checks.length) throw new Error(`${verdicts.length} verdicts for ${checks.length}`)
  verdicts.forEach((verdict, index) => {
    const check = checks[index]
    if (check?.kind !== 'transfer' || !check.expected.sender) throw new Error('unexpected check')
    if (
      !verdict.ok ||
      verdict.amount !== check.expected.minAmount ||
      !isAddressEqual(verdict.from, check.expected.sender)
    )
      throw new Error(`verdict ${index} not ok: ${JSON.stringify(verdict, (_, value) => String(value))}`)
  })
}

// --- Counters: every fetch of the process (only the measured work fetches now), and both processes' CPU ------
const traffic = { httpRequests: 0, rpcCalls: 0, requestBytes: 0, responseBytes: 0 }
const realFetch = globalThis.fetch
globalThis.fetch = Object.assign(
  async (input: string | URL | Request, init?: RequestInit) => {
    const body = typeof init?.body === 'string' ? init.body : ''
    traffic.httpRequests++
    traffic.requestBytes += body.length
    const parsed: unknown = body ? JSON.parse(body) : []
    traffic.rpcCalls += Array.isArray(parsed) ? parsed.length : 1
    const response = await realFetch(input, init)
    traffic.responseBytes += Number(response.headers.get('content-length') ?? 0)
    return response
  },
  { preconnect: realFetch.preconnect },
) as typeof fetch

/** The pid of the anvil this process spawned. */
function anvilPid(): number {
  for (const task of readdirSync('/proc/self/task'))
    for (const pid of readFileSync(`/proc/self/task/${task}/children`, 'utf8').split(/\s+/).filter(Boolean))
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'anvil') return Number(pid)
  throw new Error('anvil is not a child of this process')
}
const anvilStat = `/proc/${anvilPid()}/stat`

/** anvil's user + system CPU time so far, in ms (resolution 1000 / CLK_TCK ms). */
function anvilCpuMs(): number {
  const fields = readFileSync(anvilStat, 'utf8').split(') ')[1]?.split(' ') ?? []
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks
}

/** This process's user + system CPU time so far, in ms. */
function bunCpuMs(): number {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1000
}

type Run = {
  ms: number
  bunCpuMs: number
  anvilCpuMs: number
  httpRequests: number
  rpcCalls: number
  requestBytes: number
  responseBytes: number
}

/** Times `work` once and counts its traffic and CPU. */
async function measure(work: () => Promise<void>): Promise<Run> {
  const before = { ...traffic, bun: bunCpuMs(), anvil: anvilCpuMs() }
  const started = performance.now()
  await work()
  const ms = performance.now() - started
  return {
    ms,
    bunCpuMs: bunCpuMs() - before.bun,
    anvilCpuMs: anvilCpuMs() - before.anvil,
    httpRequests: traffic.httpRequests - before.httpRequests,
    rpcCalls: traffic.rpcCalls - before.rpcCalls,
    requestBytes: traffic.requestBytes - before.requestBytes,
    responseBytes: traffic.responseBytes - before.responseBytes,
  }
}

// --- The modes -----------------------------------------------------------------------------------------------
const chain = viemChain({ rpcUrl: anvil.rpcUrl }) // production defaults: batchSize 1,000, 10 s timeout

/**
 * The floor under the batched mode: the same 2,001 JSON-RPC calls in the same three HTTP requests, sent with
 * fetch and parsed, without viem or the rules: what anvil and HTTP cost.
 */
const rawChunks: unknown[][] = []
{
  const calls = [
    { method: 'eth_blockNumber', params: [] as Hex[] },
    ...transfers.flatMap(({ hash }) => [
      { method: 'eth_getTransactionReceipt', params: [hash] },
      { method: 'eth_getTransactionByHash', params: [hash] },
    ]),
  ].map((call, id) => ({ jsonrpc: '2.0', id, ...call }))
  for (let start = 0; start < calls.length; start += 1_000) rawChunks.push(calls.slice(start, start + 1_000))
}

/** The same head and receipts from memory, filled below: what the rules alone cost. */
let stored: { head: bigint; receipts: Awaited<ReturnType<ChainReader['receipts']>> } | undefined
const memoryChain: ChainReader = {
  headBlock: async () => stored?.head ?? 0n,
  receipts: async () => stored?.receipts ?? [],
}

const modes = {
  batched: async () => assertAllOk(await verifyPayments(chain, checks)),
  sequential: async () => {
    const verdicts: Verdict[] = []
    for (const check of checks) verdicts.push(...(await verifyPayments(chain, [check])))
    assertAllOk(verdicts)
  },
  concurrent: async () => {
    const verdicts = await Promise.all(checks.map((check) => verifyPayments(chain, [check])))
    assertAllOk(verdicts.flat())
  },
  raw: async () => {
    const answers = await Promise.all(
      rawChunks.map(async (chunk) => {
        const response = await fetch(anvil.rpcUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(chunk),
        })
        return (await response.json()) as { result?: unknown }[]
      }),
    )
    const answered = answers.flat().filter((answer) => answer.result).length
    if (answered !== 2 * TRANSFERS + 1) throw new Error(`raw: ${answered} of ${2 * TRANSFERS + 1} answered`)
  },
  rules: async () => assertAllOk(await verifyPayments(memoryChain, checks)),
}

stored = { head: await chain.headBlock(), receipts: await chain.receipts(transfers.map(({ hash }) => hash)) }
// One unmeasured warm-up each; the fast modes then take turns, so noise on this machine hits them alike.
const fastModes = ['batched', 'concurrent', 'raw', 'rules'] as const
for (const mode of fastModes) await modes[mode]()
for (const check of checks.slice(0, 100)) await verifyPayments(chain, [check])
const results: Record<keyof typeof modes, Run[]> = {
  batched: [],
  sequential: [],
  concurrent: [],
  raw: [],
  rules: [],
}
for (let run = 0; run < runs; run++)
  for (const mode of fastModes) results[mode].push(await measure(modes[mode]))
for (let run = 0; run < sequentialRuns; run++) results.sequential.push(await measure(modes.sequential))
globalThis.fetch = realFetch
anvil.stop()

/** Bun's delay for setTimeout(fn, 0), which viem's batch scheduler waits once per batch. */
const timerStarted = performance.now()
for (let tick = 0; tick < 200; tick++) await new Promise((done) => setTimeout(done, 0))
const timeoutZeroMs = (performance.now() - timerStarted) / 200

// --- Report --------------------------------------------------------------------------------------------------
function medianOf(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  if (sorted.length % 2) return sorted[middle] ?? Number.NaN
  return ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2
}
const median = (measured: Run[], field: keyof Run = 'ms') => medianOf(measured.map((run) => run[field]))

/** One figure when every run had the same, else min–max. */
function spread(
  measured: Run[],
  field: keyof Run,
  format: (value: number) => string = (value) => value.toLocaleString('en'),
): string {
  const values = measured.map((run) => run[field])
  const low = Math.min(...values)
  const high = Math.max(...values)
  return low === high ? format(low) : `${format(low)}–${format(high)}`
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`
const ms = (value: number) => `${value.toFixed(0)} ms`

function row(label: string, measured: Run[], verifies = true): string {
  const wall = median(measured)
  return [
    label,
    measured.length,
    ms(wall),
    `${ms(Math.min(...measured.map((run) => run.ms)))} / ${ms(Math.max(...measured.map((run) => run.ms)))}`,
    verifies ? ((TRANSFERS / wall) * 1000).toFixed(0) : '—',
    verifies ? `${((wall * 1000) / TRANSFERS).toFixed(0)} µs` : '—',
    ms(median(measured, 'bunCpuMs')),
    ms(median(measured, 'anvilCpuMs')),
    spread(measured, 'httpRequests'),
    spread(measured, 'rpcCalls'),
    `${spread(measured, 'requestBytes', kib)} / ${spread(measured, 'responseBytes', kib)}`,
  ].join(' | ')
}

const blocks = [...perBlock.values()]
const sequentialEachUs = (median(results.sequential) * 1000) / TRANSFERS
const report = `# Payment verification

Measured ${new Date().toISOString().slice(0, 10)} with \`bun run bench:verify\` (\`bun bench/verify.ts --runs ${runs}\`) on
${nproc} cores (nproc) of ${cpuModel}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Bun ${Bun.version}, ${anvilVersion}.

## Method

A fresh anvil (chain id 8453, MockUSDC at Base's USDC address) holds ${count} real USDC transfers from ${BUYERS} funded
accounts to one seller, each of a different amount, all mined with status success: signed locally, sent in one
JSON-RPC batch with automine off, mined into ${blocks.length} blocks (${blocks.join(' + ')} transfers), then ${CONFIRMATIONS} more blocks.
Each check is \`kind: 'transfer'\` with the exact amount, the sender and ${CONFIRMATIONS} confirmations; every run asserts that
all ${count} verdicts are ok with the right amount and sender. The reader is \`viemChain({ rpcUrl })\` with its defaults
(batches of up to 1,000 JSON-RPC calls, no retries), straight to anvil over HTTP on 127.0.0.1.

- **batched**: one \`verifyPayments(chain, checks)\` call with all ${count} checks.
- **one at a time**: ${count} sequential \`verifyPayments(chain, [check])\` calls, each awaited before the next.
- **concurrent singles**: ${count} \`verifyPayments(chain, [check])\` calls started together, awaited with \`Promise.all\`.
- **raw floor** (not a verification): the batched mode's JSON-RPC calls in the same HTTP requests, sent with
  \`fetch\` and parsed, without viem or the rules: what anvil and HTTP alone cost.
- **rules only** (no chain): the batched call over a ChainReader that returns the same head and receipts from
  memory: what \`verifyPayments\`' rules alone cost.

Each mode has one unmeasured warm-up; the four fast modes then take turns, run after run.
HTTP requests and JSON-RPC calls are counted by wrapping \`fetch\`; CPU time is \`process.cpuUsage()\` for Bun and
\`/proc/<pid>/stat\` for anvil (${(1000 / clockTicks).toFixed(0)} ms resolution); medians.

## Figures

| mode | runs | wall time, median | min / max | verifications/s | wall time / ${count} | Bun CPU | anvil CPU | HTTP requests | JSON-RPC calls | sent / received |
|---|---|---|---|---|---|---|---|---|---|---|
| ${row('batched', results.batched)} |
| ${row('one at a time', results.sequential)} |
| ${row('concurrent singles', results.concurrent)} |
| ${row('raw floor', results.raw, false)} |
| ${row('rules only', results.rules)} |

Every run's wall time, sorted (ms):

${(['batched', 'sequential', 'concurrent', 'raw', 'rules'] as const)
  .map(
    (mode) =>
      `- ${mode}: ${results[mode]
        .map((run) => run.ms)
        .sort((a, b) => a - b)
        .map((value) => value.toFixed(0))
        .join(', ')}`,
  )
  .join('\n')}

## Reading the figures

- anvil does most of the work: ${ms(median(results.batched, 'anvilCpuMs'))} of CPU to answer the batched mode's ${(TRANSFERS * 2).toLocaleString('en')} receipt and
  transaction reads, against ${ms(median(results.batched, 'bunCpuMs'))} in Bun: about ${ms(median(results.raw, 'bunCpuMs'))} sending and parsing (raw floor), ${ms(median(results.rules, 'bunCpuMs'))} the
  rules (rules only), the rest viem's request handling and formatting.
- The wall times of the fast modes fall into two groups (see every run above) while anvil's CPU time stays the
  same: anvil works on a batch's two large HTTP requests either at once, one per core, or as if on one core. The
  raw floor, without viem, splits the same way, so it is anvil's scheduling; compare modes by median and CPU time.
- Concurrent singles send as few HTTP requests as the batched call: the batching transport packs the calls started
  in one tick, and viem dedupes the concurrent \`eth_blockNumber\` reads into one (${spread(results.concurrent, 'rpcCalls')} calls, not ${(TRANSFERS * 3).toLocaleString('en')}).
- One at a time costs ${sequentialEachUs.toFixed(0)} µs per verification, of which about ${(timeoutZeroMs * 1000).toFixed(0)} µs is viem's batch scheduler waiting
  \`setTimeout(exec, 0)\`, which Bun fires after ${timeoutZeroMs.toFixed(2)} ms; the rest is one HTTP round trip of 3 calls.
- These are anvil's figures, on loopback. A hosted RPC adds network latency per HTTP request (3 per batched or
  concurrent run, ${count} one at a time) and may accept smaller batches; neither is measured here.

Setup (not measured above): ${(setupMs / 1000).toFixed(1)} s, of which ${(signMs / 1000).toFixed(1)} s signing the ${count} transactions; ${mineCalls} \`anvil_mine\` calls emptied the pool.
`
mkdirSync(join(root, 'bench/results'), { recursive: true })
writeFileSync(join(root, 'bench/results/verify.md'), report)
console.log(report)
