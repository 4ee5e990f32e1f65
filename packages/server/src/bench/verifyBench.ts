import { type ChainReader, type PaymentCheck, type Verdict, verifyPayments } from '@agentmarket/core'
import { median, percentile } from './percentile.ts'
import { countRpcTraffic, type RpcTraffic, trafficSince } from './rpcTraffic.ts'

/** The two ways of verifying a list that the benchmark compares. */
export type VerifyMode = 'batched' | 'naive'

/** How one way of verifying did: medians over the runs, latency percentiles over every sample of every run. */
export type ModeFigures = {
  verificationsPerSecond: number
  /** What one latency sample is: the wall time of the one call for the whole list, or of one verification. */
  latencyOf: 'batch' | 'verification'
  latencyMs: { p50: number; p99: number }
  rpcCallsPerVerification: number
  httpRequestsPerRun: number
  /** The last run's verdicts: `ok`, or the verifier's reason, with how many had it. */
  verdicts: Record<string, number>
  /** Its speed over the raw JSON-RPC floor's: the median of each run's ratio (the floor measured in the same run). */
  floorRatio: number
}

/** The raw JSON-RPC floor: the batched mode's reads (head, one receipt a payment) sent with fetch alone. */
export type FloorFigures = {
  /** Payments' worth of reads per second: the most any verification over this node can reach. */
  verificationsPerSecond: number
  httpRequestsPerRun: number
  /** The most calls the floor put in one HTTP request (the production reader's batch size). */
  batchSize: number
}

/** What benchVerification measured. */
export type VerificationFigures = { payments: number; runs: number; floor: FloorFigures } & Record<
  VerifyMode,
  ModeFigures
>

/** The most JSON-RPC calls viemChain puts in one HTTP request by default, which the floor copies. */
const FLOOR_BATCH_SIZE = 1_000

type Run = { ms: number; latenciesMs: number[]; traffic: RpcTraffic; verdicts: Verdict[] }
type Work = (latenciesMs: number[]) => Promise<Verdict[]>

/** The verdict's name in the report: ok, or the verifier's reason. */
const reasonOf = (verdict: Verdict) => (verdict.ok ? 'ok' : verdict.reason)

/** How many verdicts had each name, ok first, then by count. */
function countVerdicts(verdicts: Verdict[]): Record<string, number> {
  const counts = new Map<string, number>()
  for (const verdict of verdicts) counts.set(reasonOf(verdict), (counts.get(reasonOf(verdict)) ?? 0) + 1)
  return Object.fromEntries(
    [...counts].sort(([a, x], [b, y]) => Number(b === 'ok') - Number(a === 'ok') || y - x),
  )
}

/** The two modes over `checks`: each pushes its latency samples and answers its verdicts. */
function modes(chain: ChainReader, checks: readonly PaymentCheck[]): Record<VerifyMode, Work> {
  return {
    batched: async (latenciesMs) => {
      const started = performance.now()
      const verdicts = await verifyPayments(chain, checks)
      latenciesMs.push(performance.now() - started)
      return verdicts
    },
    // Our own code path one payment at a time, each awaited before the next, as a simple integrator would.
    naive: async (latenciesMs) => {
      const verdicts: Verdict[] = []
      for (const check of checks) {
        const started = performance.now()
        verdicts.push(...(await verifyPayments(chain, [check])))
        latenciesMs.push(performance.now() - started)
      }
      return verdicts
    },
  }
}

/**
 * The floor's work: the head and every check's receipt as raw JSON-RPC calls, in batches of FLOOR_BATCH_SIZE sent
 * together with fetch, the answers parsed; no reader, no rules. Throws unless every call has an answer.
 */
function rawFloor(rpcUrl: string, checks: readonly PaymentCheck[]): () => Promise<void> {
  const calls = [
    { method: 'eth_blockNumber', params: [] as string[] },
    ...checks.map((check) => ({ method: 'eth_getTransactionReceipt', params: [check.txHash] })),
  ].map((call, id) => ({ jsonrpc: '2.0', id, ...call }))
  const bodies: string[] = []
  for (let start = 0; start < calls.length; start += FLOOR_BATCH_SIZE)
    bodies.push(JSON.stringify(calls.slice(start, start + FLOOR_BATCH_SIZE)))
  return async () => {
    const answers = await Promise.all(
      bodies.map(async (body) => {
        const response = await fetch(rpcUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        })
        return (await response.json()) as unknown[]
      }),
    )
    const answered = answers.reduce((sum, batch) => sum + (Array.isArray(batch) ? batch.length : 0), 0)
    if (answered !== calls.length) throw new Error(`raw floor: ${answered} of ${calls.length} calls answered`)
  }
}

/** Runs `work` once, timing it and counting the traffic it made. */
async function measure(work: Work, traffic: RpcTraffic): Promise<Run> {
  const before = { ...traffic }
  const latenciesMs: number[] = []
  const started = performance.now()
  const verdicts = await work(latenciesMs)
  return { ms: performance.now() - started, latenciesMs, traffic: trafficSince(before, traffic), verdicts }
}

/** One mode's figures from its runs over `payments` checks. */
function figuresOf(
  runs: Run[],
  floor: Run[],
  payments: number,
  latencyOf: ModeFigures['latencyOf'],
): ModeFigures {
  const latencies = runs.flatMap((run) => run.latenciesMs)
  return {
    floorRatio: median(runs.map((run, index) => (floor[index]?.ms ?? Number.NaN) / run.ms)),
    verificationsPerSecond: median(runs.map((run) => (payments / run.ms) * 1000)),
    latencyOf,
    latencyMs: { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) },
    rpcCallsPerVerification: median(runs.map((run) => run.traffic.rpcCalls)) / payments,
    httpRequestsPerRun: median(runs.map((run) => run.traffic.httpRequests)),
    verdicts: countVerdicts(runs.at(-1)?.verdicts ?? []),
  }
}

/**
 * Verifies `checks` on `chain` (served at `rpcUrl`) batched (one verifyPayments call for the whole list) and naive
 * (verifyPayments of one check, awaited in turn), and sends the raw JSON-RPC floor's reads to `rpcUrl`, `runs` times
 * each in turns (the floor right after the batched mode) after one unmeasured warm-up (naive: a tenth of the list),
 * counting every fetch meanwhile. `progress` hears a line per run.
 * @example const figures = await benchVerification(viemChain({ rpcUrl }), rpcUrl, checks, { runs: 3 })
 */
export async function benchVerification(
  chain: ChainReader,
  rpcUrl: string,
  checks: readonly PaymentCheck[],
  { runs, progress = () => {} }: { runs: number; progress?: (line: string) => void },
): Promise<VerificationFigures> {
  const work = modes(chain, checks)
  const floorWork = rawFloor(rpcUrl, checks)
  const floor: Work = async () => {
    await floorWork()
    return []
  }
  await work.batched([])
  await floor([])
  await modes(chain, checks.slice(0, Math.ceil(checks.length / 10))).naive([])
  const results: Record<VerifyMode | 'floor', Run[]> = { batched: [], floor: [], naive: [] }
  const counter = countRpcTraffic()
  try {
    for (let run = 1; run <= runs; run++) {
      const batched = await measure(work.batched, counter.traffic)
      const raw = await measure(floor, counter.traffic)
      const naive = await measure(work.naive, counter.traffic)
      results.batched.push(batched)
      results.floor.push(raw)
      results.naive.push(naive)
      progress(
        `run ${run} of ${runs}: batched ${Math.round(batched.ms)} ms, raw floor ${Math.round(raw.ms)} ms, naive ${Math.round(naive.ms)} ms`,
      )
    }
  } finally {
    counter.stop()
  }
  return {
    payments: checks.length,
    runs,
    floor: {
      verificationsPerSecond: median(results.floor.map((run) => (checks.length / run.ms) * 1000)),
      httpRequestsPerRun: median(results.floor.map((run) => run.traffic.httpRequests)),
      batchSize: FLOOR_BATCH_SIZE,
    },
    batched: figuresOf(results.batched, results.floor, checks.length, 'batch'),
    naive: figuresOf(results.naive, results.floor, checks.length, 'verification'),
  }
}
