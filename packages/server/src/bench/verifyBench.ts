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
}

/** What benchVerification measured. */
export type VerificationFigures = { payments: number; runs: number } & Record<VerifyMode, ModeFigures>

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

/** Runs `work` once, timing it and counting the traffic it made. */
async function measure(work: Work, traffic: RpcTraffic): Promise<Run> {
  const before = { ...traffic }
  const latenciesMs: number[] = []
  const started = performance.now()
  const verdicts = await work(latenciesMs)
  return { ms: performance.now() - started, latenciesMs, traffic: trafficSince(before, traffic), verdicts }
}

/** One mode's figures from its runs over `payments` checks. */
function figuresOf(runs: Run[], payments: number, latencyOf: ModeFigures['latencyOf']): ModeFigures {
  const latencies = runs.flatMap((run) => run.latenciesMs)
  return {
    verificationsPerSecond: median(runs.map((run) => (payments / run.ms) * 1000)),
    latencyOf,
    latencyMs: { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) },
    rpcCallsPerVerification: median(runs.map((run) => run.traffic.rpcCalls)) / payments,
    httpRequestsPerRun: median(runs.map((run) => run.traffic.httpRequests)),
    verdicts: countVerdicts(runs.at(-1)?.verdicts ?? []),
  }
}

/**
 * Verifies `checks` on `chain` batched (one verifyPayments call for the whole list) and naive (verifyPayments of
 * one check, awaited in turn), `runs` times each in turns after one unmeasured warm-up (naive: a tenth of the
 * list), counting every fetch meanwhile. `progress` hears a line per run.
 * @example const figures = await benchVerification(viemChain({ rpcUrl }), checks, { runs: 3 })
 */
export async function benchVerification(
  chain: ChainReader,
  checks: readonly PaymentCheck[],
  { runs, progress = () => {} }: { runs: number; progress?: (line: string) => void },
): Promise<VerificationFigures> {
  const work = modes(chain, checks)
  await work.batched([])
  await modes(chain, checks.slice(0, Math.ceil(checks.length / 10))).naive([])
  const results: Record<VerifyMode, Run[]> = { batched: [], naive: [] }
  const counter = countRpcTraffic()
  try {
    for (let run = 1; run <= runs; run++) {
      const batched = await measure(work.batched, counter.traffic)
      const naive = await measure(work.naive, counter.traffic)
      results.batched.push(batched)
      results.naive.push(naive)
      progress(
        `run ${run} of ${runs}: batched ${Math.round(batched.ms)} ms, naive ${Math.round(naive.ms)} ms`,
      )
    }
  } finally {
    counter.stop()
  }
  return {
    payments: checks.length,
    runs,
    batched: figuresOf(results.batched, checks.length, 'batch'),
    naive: figuresOf(results.naive, checks.length, 'verification'),
  }
}
