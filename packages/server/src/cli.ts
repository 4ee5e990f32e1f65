import { parseArgs } from 'node:util'
import { type BenchLine, parseBenchLine } from './bench/benchLine.ts'
import { type UsageError, unknownWord, usageError } from './usageError.ts'

/** The commands of `agentmarket`, each with the line `--help` shows; the first is the default. */
export const COMMANDS = {
  serve: 'start the server (the default when no command is given)',
  demo: 'fill an empty database with a demo market, then exit',
  dev: 'start a local sandbox: anvil with USDC and escrows, funded wallets, a seller, the server (PORT)',
  migrate: 'apply the pending database migrations to DATABASE_URL, print them, then exit',
  copy: 'copy the market of DATABASE_URL into a new, empty database: agentmarket copy TARGET_URL',
  bench: 'time payment verification on a chain, batched and one at a time (agentmarket bench --help)',
  help: 'print this help',
} as const

/** A command of `agentmarket`. */
export type Command = keyof typeof COMMANDS

const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const

/**
 * What the words after `agentmarket` ask for: a command to run, a benchmark (`bench`, whose words are its own), or a
 * line for standard error and exit code 2.
 */
export type CommandLine =
  | { kind: 'command'; command: Exclude<Command, 'bench' | 'copy'> }
  | { kind: 'copy'; target: string }
  | { kind: 'version' }
  | BenchLine
  | UsageError

const OPTION_WORDS = Object.entries(OPTIONS).flatMap(([name, { short }]) => [`--${name}`, `-${short}`])

/**
 * Reads the words after the program's name (`process.argv.slice(2)`). Nothing is done here: the caller runs the
 * command, so help, the version and a typo never open a database or a port.
 * @example parseCommandLine(['serv']) // { kind: 'usage error', message: 'agentmarket: unknown command "serv" (did you mean "serve"?); …' }
 */
export function parseCommandLine(words: string[]): CommandLine {
  // A benchmark has options of its own, which the rest of the command line does not take.
  if (words[0] === 'bench') return parseBenchLine(words.slice(1))
  // Not strict: an unknown option is ours to report, with a suggestion, rather than a thrown library message.
  const { values, positionals, tokens } = parseArgs({
    args: words,
    options: OPTIONS,
    allowPositionals: true,
    strict: false,
    tokens: true,
  })
  const stray = tokens.find((token) => token.kind === 'option' && !(token.name in OPTIONS))
  if (stray?.kind === 'option') return unknownWord('option', stray.rawName, OPTION_WORDS)
  const valued = tokens.find((token) => token.kind === 'option' && token.value !== undefined)
  if (valued?.kind === 'option') return usageError(`${valued.rawName} takes no value`)
  if (values.help) return { kind: 'command', command: 'help' }
  if (values.version) return { kind: 'version' }
  const [word, extra, more] = positionals
  if (word === 'bench') return parseBenchLine(positionals.slice(1))
  if (word === 'copy') {
    if (extra === undefined) return usageError('copy needs the URL of the database to copy into')
    if (more !== undefined) return usageError(`unexpected argument "${more}" after copy ${extra}`)
    return { kind: 'copy', target: extra }
  }
  if (extra !== undefined) return usageError(`unexpected argument "${extra}" after ${word}`)
  if (word === undefined) return { kind: 'command', command: 'serve' }
  if (word in COMMANDS) return { kind: 'command', command: word as Exclude<Command, 'bench' | 'copy'> }
  return unknownWord('command', word, Object.keys(COMMANDS))
}

/** The variables most set-ups touch, with their defaults; README.md's "Configuration" has every one. */
const VARIABLES: [string, string][] = [
  ['PORT, HOST', 'listen address (3000, 0.0.0.0)'],
  ['BASE_URL', 'public address used in cards and links (http://localhost:$PORT)'],
  ['DATABASE_URL', 'file:…, :memory:, libsql://… or postgres://… (file:./data/market.db)'],
  ['DATABASE_AUTH_TOKEN', 'token of a remote libsql:// database'],
  ['CHAIN_RPC_URL, CHAIN_ID', 'the payment chain (Base mainnet)'],
  ['LOG_LEVEL', 'info, warn or off (info)'],
  ['RATE_LIMITS', 'on or off (on)'],
]

/** Pads each first column to the widest, for the aligned lists of `--help`. */
function columns(rows: [string, string][]): string[] {
  const width = Math.max(...rows.map(([left]) => left.length))
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`)
}

/** The text of `agentmarket --help`. */
export function usage(version: string): string {
  return [
    `agentmarket ${version}: a marketplace where software agents sell their skills`,
    '',
    'Usage: agentmarket [command]        (from a checkout: bun start [command])',
    '',
    'Commands:',
    ...columns(Object.entries(COMMANDS)),
    '',
    'Options:',
    ...columns([
      ['-h, --help', 'print this help'],
      ['-v, --version', 'print the version'],
    ]),
    '',
    'Environment (every variable, its default and its checks: README.md, "Configuration"):',
    ...columns(VARIABLES),
    '',
  ].join('\n')
}

/** A word as a POSIX shell reads it back: as it is when it holds no special character, else single-quoted. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`
}

// What says which database and address a server uses; the token and a database password are secrets, so only their
// places are shown.
const WHERE_VARIABLES = ['DATABASE_URL', 'DATABASE_AUTH_TOKEN', 'PORT', 'HOST', 'BASE_URL'] as const

/**
 * The command that starts the server on the database and address these variables name: the variables that were set
 * (a token as `…`), then `bun start` from a checkout or, from the binary, the binary as it was called.
 * @example serveCommand({ DATABASE_URL: 'file:/tmp/demo.db' }) // 'DATABASE_URL=file:/tmp/demo.db bun start'
 */
export function serveCommand(env: Record<string, string | undefined>): string {
  const set = WHERE_VARIABLES.filter((name) => env[name])
  const shown = (name: (typeof WHERE_VARIABLES)[number]) => {
    const value = env[name] ?? ''
    if (name === 'DATABASE_AUTH_TOKEN') return '…'
    if (name !== 'DATABASE_URL' || !URL.canParse(value) || !new URL(value).password) return shellWord(value)
    const url = new URL(value)
    url.password = 'PASSWORD'
    return shellWord(url.href).replace('PASSWORD', '…')
  }
  const assignments = set.map((name) => `${name}=${shown(name)}`)
  const program = Bun.isStandaloneExecutable ? shellWord(process.argv0) : 'bun start'
  return [...assignments, program].join(' ')
}
