import { join } from 'node:path'
import { runToEnd } from '../../tests/support/process.ts'

/** One bounded wrk run against a loopback URL. */
export type WrkOptions = {
  url: string
  seconds: number
  connections?: number
  method?: string
  body?: string
  /** A bearer key sent with every request. */
  bearerKey?: string
  /** A prefix that makes each body unique: `%d` in `body` becomes `<prefix>-<n>`. */
  uniquePrefix?: string
  /** A file of paths, one a line, requested in turn (the URL then only names the host). */
  pathsFile?: string
}

/** What wrk measured: requests, throughput, latency percentiles, and answers that were not 2xx/3xx. */
export type WrkResult = {
  requests: number
  requestsPerSecond: number
  p50Ms: number
  p99Ms: number
  non2xx: number
  socketErrors: number
}

let runNumber = 0
const SCRIPT = join(import.meta.dir, '../wrk/request.lua')

/** wrk's duration text (e.g. `382.00us`, `1.23ms`, `2.01s`) in milliseconds. */
function toMs(text: string): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(text.trim())
  if (!match) throw new Error(`wrk: cannot read the duration "${text}"`)
  const scale = { us: 0.001, ms: 1, s: 1_000, m: 60_000 }[match[2] as 'us' | 'ms' | 's' | 'm']
  return Number(match[1]) * scale
}

/** Runs wrk (1 thread, `connections` connections, `--latency`) and reads its report. */
export async function runWrk(options: WrkOptions): Promise<WrkResult> {
  if (!/^http:\/\/127\.0\.0\.1[:/]/.test(options.url)) throw new Error('wrk: loopback targets only')
  // wrk prints its usage (and exits 0) for a duration that is not a whole number.
  if (!Number.isInteger(options.seconds) || options.seconds < 1)
    throw new Error('wrk: a whole number of seconds')
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin' }
  if (options.method) env.WRK_METHOD = options.method
  if (options.body) env.WRK_BODY = options.body
  if (options.bearerKey) env.WRK_AUTH = options.bearerKey
  // A nonce per run: wrk's counter restarts at 1 each run, and the bodies must differ across runs too.
  if (options.pathsFile) env.WRK_PATHS_FILE = options.pathsFile
  if (options.uniquePrefix) env.WRK_UNIQUE = `${options.uniquePrefix}${(runNumber++).toString(36)}`
  const connections = options.connections ?? 32
  const args = [
    'wrk',
    '-t1',
    `-c${connections}`,
    `-d${options.seconds}s`,
    '--latency',
    '-s',
    SCRIPT,
    options.url,
  ]
  const { exitCode, stdout, stderr } = await runToEnd(args, { env })
  if (exitCode !== 0) throw new Error(`wrk failed (${exitCode}): ${stderr || stdout}`)
  const number = (pattern: RegExp) => Number(pattern.exec(stdout)?.[1] ?? 0)
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout)
  return {
    requests: number(/(\d+) requests in/),
    requestsPerSecond: number(/Requests\/sec:\s+([\d.]+)/),
    p50Ms: toMs(/\n\s+50%\s+(\S+)/.exec(stdout)?.[1] ?? 'NaNms'),
    p99Ms: toMs(/\n\s+99%\s+(\S+)/.exec(stdout)?.[1] ?? 'NaNms'),
    non2xx: number(/Non-2xx or 3xx responses: (\d+)/),
    socketErrors: socket ? socket.slice(1).reduce((sum, value) => sum + Number(value), 0) : 0,
  }
}

/** Whether wrk is installed (Debian: apt-get install wrk). */
export async function hasWrk(): Promise<boolean> {
  return runToEnd(['sh', '-c', 'command -v wrk']).then(({ exitCode }) => exitCode === 0)
}
