/**
 * Benchmark section "Payment verification": real USDC transfers on a local anvil (the tests' harness), verified
 * (a) in one verifyPayments call through the production viemChain, (b) by a naive plain-viem integrator, one
 * payment at a time, (c) by the rules alone over the same receipts in memory; plus concurrent single-check calls
 * and a raw fetch floor. Counts HTTP requests, JSON-RPC calls and the CPU time of Bun and anvil; every run
 * asserts that every verdict is ok with the right amount and sender. Then runs the binary's own benchmark,
 * `agentmarket bench verify --generate 2000 --runs 3` (from this checkout), and reports its output as it printed it.
 * Usage: bun bench/verify.ts [--quick] [--json PATH] [--runs N] [--per-block N]
 *   --quick      300 transfers and fewer runs, instead of 2,000 (and the command on 300 transfers, one run)
 *   --json PATH  also writes { title, markdown, goals } to PATH
 *   --runs N     measured runs of the fast modes (default 9, quick 5)
 *   --per-block  transfers mined per block (default 100)
 * The markdown goes to stdout, progress to stderr.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import {
  type Address,
  createPublicClient,
  decodeEventLog,
  type Hex,
  http,
  isAddressEqual,
  parseEventLogs,
  toEventSelector,
} from 'viem'
import { viemChain } from '../packages/core/src/adapters/viemChain.ts'
import { isPayerProof, payerProofTypedData } from '../packages/core/src/payments/PayerProof.ts'
import {
  type PaymentCheck,
  TRANSFER_EVENT_ABI,
  type Verdict,
  verifyPayments,
} from '../packages/core/src/payments/Verifier.ts'
import type { ChainReader, ReceiptLog } from '../packages/core/src/ports/Chain.ts'
import { countRpcTraffic, trafficSince } from '../packages/server/src/bench/rpcTraffic.ts'
import { generateTransfers } from '../packages/server/src/bench/transfers.ts'
import { startAnvil, USDC_ABI, USDC_ADDRESS } from '../tests/support/anvil.ts'
import { runToEnd } from '../tests/support/process.ts'
import { clockTicks, cpuMs } from './lib/proc.ts'
import { finishSection, type Goal, median as medianOf, sectionFlags, table } from './lib/section.ts'

const root = resolve(import.meta.dir, '..')
const { quick, json } = sectionFlags()
const flag = (name: string) => {
  const index = process.argv.indexOf(name)
  return index > 0 ? process.argv[index + 1] : undefined
}
const TRANSFERS = quick ? 300 : 2_000
/** Measured runs of the fast modes; the naive mode, slower, runs about a third as often. */
const runs = Number(flag('--runs') ?? (quick ? 5 : 9))
const naiveRuns = Math.max(1, Math.ceil(runs / 3))
const PER_BLOCK = Number(flag('--per-block') ?? 100)
const BUYERS = 4
const CONFIRMATIONS = 3
/** The production reader's default batch size, which the raw floors copy. */
const BATCH_SIZE = 1_000
const count = TRANSFERS.toLocaleString('en')
const progress = (message: string) => process.stderr.write(`verify: ${message}\n`)

const anvilVersion = (await runToEnd([join(root, 'node_modules/.bin/anvil'), '--version'])).stdout
  .split('\n')[0]
  ?.replace('anvil Version:', 'anvil')
  .trim()

// --- Setup: real transfers, mined PER_BLOCK to a block (the binary's generator, `agentmarket bench verify`) ------
const setupStarted = performance.now()
const anvil = await startAnvil()
process.once('exit', () => anvil.stop())
await anvil.installUsdc()
const buyers = anvil.accounts.slice(1, 1 + BUYERS)
const { transfers, blockSizes, mineCalls } = await generateTransfers(anvil.rpcUrl, anvil.accounts, {
  count: TRANSFERS,
  buyers: BUYERS,
  perBlock: PER_BLOCK,
  confirmations: CONFIRMATIONS,
})
const setupMs = performance.now() - setupStarted
progress(`${count} transfers mined into ${blockSizes.length} blocks in ${(setupMs / 1000).toFixed(1)} s`)

const checks: PaymentCheck[] = transfers.map(({ buyer, seller, amount, hash }) => ({
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

/** A payment as a mode found it: paid with this amount from this sender, or not (yet). */
type Found = { amount: bigint; from: Address } | null
const foundOf = (verdict: Verdict): Found =>
  verdict.ok ? { amount: verdict.amount, from: verdict.from } : null

/** Throws unless every payment was found paid with its own transfer's amount and sender. */
function assertAllOk(found: Found[]) {
  if (found.length !== checks.length) throw new Error(`${found.length} verdicts for ${checks.length}`)
  found.forEach((paid, index) => {
    const check = checks[index]
    if (check?.kind !== 'transfer' || !check.expected.sender) throw new Error('unexpected check')
    if (
      !paid ||
      paid.amount !== check.expected.minAmount ||
      !isAddressEqual(paid.from, check.expected.sender)
    )
      throw new Error(`payment ${index} not ok: ${JSON.stringify(paid, (_, value) => String(value))}`)
  })
}

// --- Counters: every fetch of the process (only the measured work fetches now), and both processes' CPU -------
const counter = countRpcTraffic()
const traffic = counter.traffic

/** The pid of the anvil this process spawned. */
function anvilPid(): number {
  for (const task of readdirSync('/proc/self/task'))
    for (const pid of readFileSync(`/proc/self/task/${task}/children`, 'utf8').split(/\s+/).filter(Boolean))
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'anvil') return Number(pid)
  throw new Error('anvil is not a child of this process')
}
const anvilProcess = anvilPid()

/** anvil's user + system CPU time so far, in ms (resolution 1000 / CLK_TCK ms). */
const anvilCpuMs = () => cpuMs(anvilProcess)

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
  const before = { traffic: { ...traffic }, bun: bunCpuMs(), anvil: anvilCpuMs() }
  const started = performance.now()
  await work()
  const ms = performance.now() - started
  return {
    ms,
    bunCpuMs: bunCpuMs() - before.bun,
    anvilCpuMs: anvilCpuMs() - before.anvil,
    ...trafficSince(before.traffic, traffic),
  }
}

// --- The modes ---------------------------------------------------------------------------------------------------
const chain = viemChain({ rpcUrl: anvil.rpcUrl }) // production defaults: batchSize 1,000, 10 s timeout

/** A typical integrator's client: plain viem, default HTTP transport, no batching. */
const naiveClient = createPublicClient({ chain: anvil.chain, transport: http(anvil.rpcUrl) })

/** The naive check of one payment: its receipt, then the head, then its Transfer log. */
async function naiveVerify(check: PaymentCheck): Promise<Found> {
  if (check.kind !== 'transfer') throw new Error('naive mode checks transfers only')
  const { token, recipient, minAmount, sender, minConfirmations } = check.expected
  const receipt = await naiveClient.getTransactionReceipt({ hash: check.txHash })
  const head = await naiveClient.getBlockNumber({ cacheTime: 0 })
  if (receipt.status !== 'success' || head - receipt.blockNumber + 1n < BigInt(minConfirmations)) return null
  const paying = parseEventLogs({ abi: USDC_ABI, eventName: 'Transfer', logs: receipt.logs }).find(
    (log) =>
      isAddressEqual(log.address, token) &&
      isAddressEqual(log.args.to, recipient) &&
      (!sender || isAddressEqual(log.args.from, sender)) &&
      log.args.value >= minAmount,
  )
  return paying ? { amount: paying.args.value, from: paying.args.from } : null
}

/** (a)'s raw JSON-RPC calls (the head, then one receipt per payment) in chunks of BATCH_SIZE, one HTTP request each. */
function rawChunks() {
  const calls = [
    { method: 'eth_blockNumber', params: [] as Hex[] },
    ...transfers.map(({ hash }) => ({ method: 'eth_getTransactionReceipt', params: [hash] })),
  ].map((call, id) => ({ jsonrpc: '2.0', id, ...call }))
  const chunks: (typeof calls)[] = []
  for (let start = 0; start < calls.length; start += BATCH_SIZE)
    chunks.push(calls.slice(start, start + BATCH_SIZE))
  return { chunks, total: calls.length }
}

/** Sends the chunks with fetch and parses the answers; throws unless every call answered. */
async function sendRaw({ chunks, total }: ReturnType<typeof rawChunks>) {
  const answers = await Promise.all(
    chunks.map(async (chunk) => {
      const response = await fetch(anvil.rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(chunk),
      })
      return (await response.json()) as { result?: unknown }[]
    }),
  )
  const answered = answers.flat().filter((answer) => answer.result).length
  if (answered !== total) throw new Error(`raw: ${answered} of ${total} answered`)
}
const rawCalls = rawChunks()

/** The same head and receipts from memory: what the rules alone cost. */
const stored = {
  head: await chain.headBlock(),
  receipts: await chain.receipts(transfers.map(({ hash }) => hash)),
}
const memoryChain: ChainReader = { headBlock: async () => stored.head, receipts: async () => stored.receipts }

const modes = {
  batched: async () => assertAllOk((await verifyPayments(chain, checks)).map(foundOf)),
  concurrent: async () => {
    const verdicts = await Promise.all(checks.map((check) => verifyPayments(chain, [check])))
    assertAllOk(verdicts.flat().map(foundOf))
  },
  naive: async () => {
    const found: Found[] = []
    for (const check of checks) found.push(await naiveVerify(check))
    assertAllOk(found)
  },
  raw: () => sendRaw(rawCalls),
  rules: async () => assertAllOk((await verifyPayments(memoryChain, checks)).map(foundOf)),
}
type Mode = keyof typeof modes
// The raw floor runs right after the batched mode, so each run's pair meets the same moment of the machine (anvil's
// time per read moves between runs; a ratio of medians taken from different moments flipped with it).
const order: Mode[] = ['batched', 'raw', 'naive', 'concurrent', 'rules']

// One unmeasured warm-up each (the naive one on a tenth of the checks); then the modes take turns, so noise on
// this machine hits them alike.
for (const mode of order) if (mode !== 'naive') await modes[mode]()
for (const check of checks.slice(0, Math.ceil(TRANSFERS / 10))) await naiveVerify(check)
const results = Object.fromEntries(order.map((mode) => [mode, [] as Run[]])) as Record<Mode, Run[]>
const measuredStarted = performance.now()
for (let run = 0; run < runs; run++)
  for (const mode of order)
    if (mode !== 'naive' || run < naiveRuns) results[mode].push(await measure(modes[mode]))
progress(`measured in ${((performance.now() - measuredStarted) / 1000).toFixed(1)} s`)
counter.stop()
anvil.stop()

/** Microseconds per call of `work` over every stored log, warm. */
function perLogUs(work: (log: ReceiptLog) => unknown): number {
  const logs = stored.receipts.flatMap((receipt) => receipt?.logs ?? [])
  for (const log of logs) work(log)
  const started = performance.now()
  for (let round = 0; round < 3; round++) for (const log of logs) work(log)
  return ((performance.now() - started) * 1000) / (3 * logs.length)
}
// What the rules spend per Transfer log: viem's decodeEventLog, and inside it the event signature's hash.
const decodeUs = perLogUs((log) =>
  decodeEventLog({ abi: TRANSFER_EVENT_ABI, data: log.data, topics: log.topics as [Hex, ...Hex[]] }),
)
const selectorUs = perLogUs(() => toEventSelector(TRANSFER_EVENT_ABI[0]))

// What binding a payment to its task costs: the payer's EIP-712 signature checked once per paid verify (a key's
// signature is recovered locally; only contract wallets cost a chain call, not measured here).
const PROOFS = quick ? 200 : 1_000
const proofClaims = checks.slice(0, PROOFS).map((check, index) => ({
  payer: buyers[index % BUYERS] as (typeof buyers)[number],
  claim: { market: 'https://market.example', agent: 'seller', task: `task_${index}`, txHash: check.txHash },
}))
const proofs = await Promise.all(
  proofClaims.map(({ payer, claim }) => payer.signTypedData(payerProofTypedData(8453, claim) as never)),
)
const noChain: ChainReader = { headBlock: async () => 0n, receipts: async () => [] }
const proofRuns: number[] = []
for (let run = 0; run < 3; run++) {
  const started = performance.now()
  for (const [index, { payer, claim }] of proofClaims.entries())
    if (!(await isPayerProof(noChain, payer.address, 8453, claim, proofs[index] as Hex)))
      throw new Error('a payer proof did not verify')
  proofRuns.push(performance.now() - started)
}
const proofRate = (PROOFS / medianOf(proofRuns)) * 1000

// --- The binary's benchmark, run as a user runs it (its own anvil; a clean environment, so its defaults apply) -------
const binaryArgs = ['bench', 'verify', '--generate', quick ? '300' : '2000', '--runs', quick ? '1' : '3']
const binaryCommand = `bun packages/server/src/main.ts ${binaryArgs.join(' ')}`
progress(`running ${binaryCommand}`)
const binaryRun = await runToEnd(['bun', 'packages/server/src/main.ts', ...binaryArgs], {
  cwd: root,
  env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' },
})
if (binaryRun.exitCode !== 0)
  throw new Error(`${binaryCommand} exited with ${binaryRun.exitCode}:\n${binaryRun.stderr}`)
/** A command's output in a fence, without trailing blanks. */
const fenced = (text: string) => `\`\`\`\n${text.replace(/\s+$/, '').replace(/[ \t]+\n/g, '\n')}\n\`\`\``

// --- Report --------------------------------------------------------------------------------------------------------
const median = (mode: Mode, field: keyof Run = 'ms') => medianOf(results[mode].map((run) => run[field]))

/** One figure when every run had the same, else min–max. */
function spread(
  mode: Mode,
  field: keyof Run,
  format = (value: number) => value.toLocaleString('en'),
): string {
  const values = results[mode].map((run) => run[field])
  const low = Math.min(...values)
  const high = Math.max(...values)
  return low === high ? format(low) : `${format(low)}–${format(high)}`
}

const whole = (value: number) => Math.round(value).toLocaleString('en')
const ms = (value: number) => `${whole(value)} ms`
const kib = (bytes: number) => `${whole(bytes / 1024)} KiB`
/** Payments per second at a mode's median wall time. */
const perSecond = (mode: Mode) => (TRANSFERS / median(mode)) * 1000
const times = (value: number) => `${value >= 10 ? whole(value) : value.toFixed(1)}×`

const labels: Record<Mode, string> = {
  batched: '(a) batched `verifyPayments`, `viemChain`',
  naive: '(b) naive plain viem, one at a time',
  concurrent: 'concurrent single-check calls, `viemChain`',
  raw: 'raw floor: (a)’s calls, fetch only',
  rules: '(c) rules only, receipts in memory',
}
const verifies = (mode: Mode) => mode !== 'raw'

function row(mode: Mode): string[] {
  const rate = perSecond(mode)
  return [
    labels[mode],
    String(results[mode].length),
    ms(median(mode)),
    spread(mode, 'ms', ms),
    verifies(mode) ? whole(rate) : `(${whole(rate)})`,
    verifies(mode) ? times(rate / perSecond('naive')) : '—',
    ms(median(mode, 'bunCpuMs')),
    ms(median(mode, 'anvilCpuMs')),
    spread(mode, 'httpRequests'),
    spread(mode, 'rpcCalls'),
    `${kib(median(mode, 'requestBytes'))} / ${kib(median(mode, 'responseBytes'))}`,
  ]
}

const batchedRate = perSecond('batched')
const versusNaive = batchedRate / perSecond('naive')
const rulesRate = perSecond('rules')
// The ratio in each run (its raw floor and its batched verification side by side), then the median of those.
const pairedRatios = results.raw.map((run, index) => run.ms / (results.batched[index]?.ms ?? Number.NaN))
const rawRatio = medianOf(pairedRatios)
const goals: Goal[] = [
  {
    name: 'batched verifyPayments (viemChain on anvil), verifications/s',
    value: whole(batchedRate),
    target: '>= 10,000',
    met: batchedRate >= 10_000,
  },
  {
    name: 'batched verifyPayments: ratio to the raw fetch floor',
    value: rawRatio.toFixed(2),
    target: '>= 0.8',
    met: rawRatio >= 0.8,
  },
  { name: 'batched vs naive plain viem', value: times(versusNaive), target: '>= 5×', met: versusNaive >= 5 },
  {
    name: 'rules alone, verifications/s',
    value: whole(rulesRate),
    target: '>= 200,000',
    met: rulesRate >= 200_000,
  },
  {
    name: "payer proof (a key's EIP-712 signature recovered), checks/s",
    value: whole(proofRate),
    target: '>= 500',
    met: proofRate >= 500,
  },
]

// Where the batched time goes: both processes' CPU, and anvil's CPU per receipt read (from the raw floor).
const batchedAnvilMs = median('batched', 'anvilCpuMs')
const batchedBunMs = median('batched', 'bunCpuMs')
const receiptCpuUs = (median('raw', 'anvilCpuMs') * 1000) / (TRANSFERS + 1)
const blockLayout =
  Math.min(...blockSizes) === Math.max(...blockSizes)
    ? `${blockSizes.length} blocks of ${blockSizes[0]}`
    : `${blockSizes.length} blocks of ${Math.min(...blockSizes)}–${Math.max(...blockSizes)}`

const markdown = `## Payment verification

${count} real USDC transfers on a local ${anvilVersion} (the tests' harness: chain id 8453, MockUSDC at Base's USDC
address; ${BUYERS} senders, every amount different, mined ${blockLayout} transfers, then ${CONFIRMATIONS} more blocks) are
verified (a) by one \`verifyPayments\` call through the production \`viemChain\` (JSON-RPC batches of up to
${BATCH_SIZE.toLocaleString('en')} calls over HTTP on 127.0.0.1), (b) by a naive plain-viem integrator who, one payment at a time,
awaits \`getTransactionReceipt\`, then \`getBlockNumber({ cacheTime: 0 })\`, then finds the Transfer log with
\`parseEventLogs\`, and (c) by the rules alone over the same receipts in memory; every run asserts that all ${count}
payments are found paid with the right amount and sender. Medians of ${runs} runs (naive: ${naiveRuns}) taken in turns after
one warm-up; HTTP requests and JSON-RPC calls are counted by wrapping \`fetch\`, CPU time is \`process.cpuUsage()\` for
Bun and \`/proc/<pid>/stat\` for anvil (${whole(1000 / clockTicks)} ms resolution).

${table(
  [
    'mode',
    'runs',
    'wall time, median',
    'min–max',
    'verifications/s',
    'vs naive',
    'Bun CPU',
    'anvil CPU',
    'HTTP requests',
    'JSON-RPC calls',
    'sent / received',
  ],
  order.map(row),
)}

The raw floor is not verification: it sends (a)'s JSON-RPC calls in the same HTTP requests with \`fetch\` and parses
the answers, without the reader or the rules (in brackets, the payments' worth of reads per second); (a) runs at
${rawRatio.toFixed(2)} of its speed (the median of the ${pairedRatios.length} runs' ratios, each run's floor measured right after its (a):
${Math.min(...pairedRatios).toFixed(2)}–${Math.max(...pairedRatios).toFixed(2)}). \`viemChain\` sends its reads through its own batcher (\`jsonRpcBatcher\`: the calls of one
event-loop turn in batches of up to ${BATCH_SIZE.toLocaleString('en')}, one \`fetch\` each, with viem's timeout, body-size bound and error
classes) and formats only the fields the rules read; it reads a transaction's call data (\`eth_getTransactionByHash\`)
only for transactions sent to an escrow, the one rule that reads it. Concurrent single-check calls are
\`verifyPayments(chain, [check])\` for every payment, started together: the batcher packs them into as few requests as
(a), and they share one head read. One \`verifyPayments(chain, [check])\` awaited per payment is not measured here: it
is the naive mode of \`agentmarket bench verify\` below (the head and the receipt in one HTTP request per payment, after
the batcher's \`setImmediate\` wait for the rest of the turn's calls; its \`setTimeout(0)\` waited about 1 ms in Bun).

Where (a)'s time goes: anvil works ${ms(batchedAnvilMs)} of CPU per run and Bun ${ms(batchedBunMs)} (about ${ms(median('raw', 'bunCpuMs'))} of it sending and
parsing, as in the raw floor, and ${ms(median('rules', 'bunCpuMs'))} the rules), and the raw floor, which only fetches, reaches ${whole(perSecond('raw'))} payments/s:
(a) is bound by ${batchedAnvilMs >= batchedBunMs ? "anvil's" : "Bun's"} CPU; anvil spends about ${whole(receiptCpuUs)} µs of CPU on each \`eth_getTransactionReceipt\`.
The rules cost ${((median('rules') * 1000) / TRANSFERS).toFixed(1)} µs a payment: one pass over the receipt's logs reading Transfer logs straight from
topics and data, addresses compared in lowercase forms computed once each, where viem's \`decodeEventLog\` takes
${decodeUs.toFixed(0)} µs per log, ${selectorUs.toFixed(0)} µs of it hashing the event signature again on every call.

Binding a payment to its task: each paid verify also checks the payer's EIP-712 signature (SECURITY.md "Money").
A key's signature is recovered locally with viem (noble secp256k1): ${whole(proofRate)} checks/s on one core, ${(1000 / proofRate).toFixed(2)} ms
each (median of 3 runs over ${PROOFS.toLocaleString('en')} distinct signatures). That is per paid task, behind the 30 a minute payment limit
per client, so it is not on a hot path; the batched receipt reads above are what a busy verifier waits on.

Setup, not measured above: ${(setupMs / 1000).toFixed(1)} s, ${mineCalls} \`anvil_mine\` calls. anvil's receipt reads cost more the more transactions
the block holds, so the transfers are mined ${PER_BLOCK} to a block (\`--per-block\`) rather than ~870 to a 30M-gas block.

### Verification benchmark in the binary (\`agentmarket bench verify\`)

The same measurement for anyone with the shipped binary (README.md, "Commands"): \`verifyPayments\` over the production
\`viemChain\`, batched (one call for the whole list) against naive (\`verifyPayments(chain, [check])\` awaited one payment
at a time), on transfers it generates on anvil or on a file of transaction hashes on any chain. Naive here is our own
code path, two JSON-RPC calls (head and receipt) in one HTTP request per payment. This run is made by every
\`bun bench/verify.ts\` right after the figures above, from the checkout, with only \`PATH\` and \`HOME\` in its
environment (the binary runs the same code as \`agentmarket bench verify\`):

\`\`\`sh
${binaryCommand}
\`\`\`

${fenced(binaryRun.stdout)}

Standard error carried the progress:

${fenced(binaryRun.stderr)}
`

finishSection({ title: 'Payment verification', markdown, goals }, json)
