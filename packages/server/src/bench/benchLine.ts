import { parseArgs } from 'node:util'
import { type UsageError, unknownWord, usageError } from '../usageError.ts'

/** The benchmarks of `agentmarket bench`, each with its help line. */
export const BENCHMARKS = {
  verify: 'payment verification: batched verifyPayments against one payment at a time',
} as const

/** What `agentmarket bench verify` was asked to do. */
export type VerifyOptions = {
  /** The payments: the transactions of a file, or N transfers generated on anvil first. */
  input: { kind: 'hashes'; path: string } | { kind: 'generate'; count: number }
  /** The chain's JSON-RPC from `--rpc`; null: CHAIN_RPC_URL (hashes) or an anvil started for the run (generate). */
  rpc: string | null
  runs: number
  json: boolean
}

/** What the words after `agentmarket bench` ask for: its help, a benchmark to run, or a usage error. */
export type BenchLine = { kind: 'bench help' } | { kind: 'bench verify'; options: VerifyOptions } | UsageError

const OPTIONS = {
  generate: { type: 'string' },
  hashes: { type: 'string' },
  rpc: { type: 'string' },
  runs: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const

/** The most transfers --generate makes: anvil holds them in memory, and signing takes about a second per 5,000. */
export const MAX_GENERATED = 100_000
const MAX_RUNS = 100
const HELP = 'agentmarket bench --help for the benchmarks and their options'
const OPTION_WORDS = [...Object.keys(OPTIONS).map((name) => `--${name}`), '-h']

/** A whole number from 1 to `max` written plainly, or null. */
function wholeNumber(text: string, max: number): number | null {
  return /^[1-9]\d{0,6}$/.test(text) && Number(text) <= max ? Number(text) : null
}

/** The options' values once each is known to be well formed, or the usage error of the first that is not. */
function verifyOptions(values: Record<string, string | boolean | undefined>): VerifyOptions | UsageError {
  const text = (name: keyof typeof OPTIONS) => (typeof values[name] === 'string' ? values[name] : undefined)
  const [generate, hashes, rpc, runs = '3'] = [text('generate'), text('hashes'), text('rpc'), text('runs')]
  if (generate !== undefined && hashes !== undefined)
    return usageError('bench verify takes --generate N or --hashes FILE, not both', HELP)
  if (generate === undefined && hashes === undefined)
    return usageError('bench verify needs --generate N or --hashes FILE', HELP)
  const count = generate === undefined ? null : wholeNumber(generate, MAX_GENERATED)
  if (generate !== undefined && count === null)
    return usageError(
      `--generate "${generate}" must be a whole number from 1 to ${MAX_GENERATED.toLocaleString('en')}`,
      HELP,
    )
  const runCount = wholeNumber(runs, MAX_RUNS)
  if (runCount === null)
    return usageError(`--runs "${runs}" must be a whole number from 1 to ${MAX_RUNS}`, HELP)
  if (rpc !== undefined && !(URL.canParse(rpc) && /^https?:$/.test(new URL(rpc).protocol)))
    return usageError(`--rpc "${rpc}" must be an http(s) URL`, HELP)
  return {
    input: count === null ? { kind: 'hashes', path: hashes ?? '' } : { kind: 'generate', count },
    rpc: rpc ?? null,
    runs: runCount,
    json: values.json === true,
  }
}

/**
 * Reads the words after `agentmarket bench`: the benchmark's name and its options. Nothing is run here, and no
 * setting is read (whether CHAIN_RPC_URL is set is the command's to check).
 * @example parseBenchLine(['verify', '--generate', '2000']) // { kind: 'bench verify', options: { input: { kind: 'generate', count: 2000 }, rpc: null, runs: 3, json: false } }
 */
export function parseBenchLine(words: string[]): BenchLine {
  const { values, positionals, tokens } = parseArgs({
    args: words,
    options: OPTIONS,
    allowPositionals: true,
    strict: false,
    tokens: true,
  })
  for (const token of tokens) {
    if (token.kind !== 'option') continue
    if (!(token.name in OPTIONS)) return unknownWord('option', token.rawName, OPTION_WORDS, HELP)
    const takesValue = OPTIONS[token.name as keyof typeof OPTIONS].type === 'string'
    // Not strict, parseArgs hands a valued option the next word even when it is another option.
    if (takesValue && (token.value === undefined || (!token.inlineValue && token.value.startsWith('-'))))
      return usageError(`${token.rawName} needs a value`, HELP)
    if (!takesValue && token.value !== undefined) return usageError(`${token.rawName} takes no value`, HELP)
  }
  if (values.help) return { kind: 'bench help' }
  const [name, extra] = positionals
  if (name === undefined) return usageError('bench needs the name of a benchmark: verify', HELP)
  if (!(name in BENCHMARKS)) return unknownWord('benchmark', name, Object.keys(BENCHMARKS), HELP)
  if (extra !== undefined) return usageError(`unexpected argument "${extra}" after bench ${name}`, HELP)
  const options = verifyOptions(values)
  return 'kind' in options ? options : { kind: 'bench verify', options }
}

/** The text of `agentmarket bench --help`. */
export function benchUsage(): string {
  return `Usage: agentmarket bench verify (--generate N | --hashes FILE) [--rpc URL] [--runs N] [--json]
       (from a checkout: bun start bench verify …)

Times payment verification through the server's own code, the production viemChain reader and
verifyPayments, two ways: batched, one verifyPayments call for the whole list; naive, verifyPayments(chain,
[check]) awaited one payment at a time. For each: verifications per second, p50/p99 latency (batched: the
wall time of the one call; naive: each verification), JSON-RPC calls per verification (every fetch is
counted), and the verdicts by reason: ok, or the verifier's reason for each payment that is not.

Payments:
  --generate N   make N real USDC transfers first (1 to ${MAX_GENERATED.toLocaleString('en')}) on an anvil started for the run
                 (chain 8453, a mock USDC at Base's USDC address; it needs the anvil of npm i -g
                 @foundry-rs/anvil), or on the anvil at --rpc; each is checked with its own seller,
                 amount and sender and MIN_CONFIRMATIONS, so every one should be ok
  --hashes FILE  the transactions of FILE (one 0x hash per line), on the chain at --rpc or CHAIN_RPC_URL,
                 whose chain id must be CHAIN_ID. Each is checked as a payment in USDC_CONTRACT to whoever
                 its first USDC transfer pays (any seller), of at least that amount, from any sender, with
                 MIN_CONFIRMATIONS; recipient and amount are read once before the runs, untimed. A real
                 USDC transfer is ok; anything else shows the verifier's reason: pending (no receipt, or
                 too few confirmations), reverted, wrong_token (no USDC transfer in it)

Options:
  --rpc URL      the chain's JSON-RPC (http or https)
  --runs N       measured runs after one warm-up, reported as medians (default 3)
  --json         print one JSON object with the same figures instead of the table
  -h, --help     print this help
`
}
