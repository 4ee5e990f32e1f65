/**
 * Installs the Debian packages agentmarket needs beyond Bun and npm packages, when they are missing and this user
 * may install them (root, or sudo without a password); otherwise prints one line with the exact command to run and
 * exits 1. Every probe goes through PATH (the packages' commands, `id`, `sudo`, `apt-get`), so a test can stand in
 * for any of them.
 * Usage: bun scripts/system-deps.ts setup   (the server's packages: `bun install` runs it)
 *        bun scripts/system-deps.ts test    (the server's, the tests' and the benchmarks': `bun run test`, .ci/run)
 */

/** What a package is needed for; `setup` installs the server's, `test` everything. */
type Part = 'server' | 'tests' | 'benchmarks'

/** A Debian package, the command on PATH that shows it is installed, and what needs it. */
type SystemPackage = { command: string; part: Part; for: string }

/** The one list of the Debian packages agentmarket needs, by Debian name. */
export const SYSTEM_PACKAGES = {
  // Never a browser downloaded by a test tool: Debian's, driven by playwright-core (tests/support/browser.ts).
  chromium: { command: 'chromium', part: 'tests', for: 'the browser tests' },
  wrk: { command: 'wrk', part: 'benchmarks', for: 'the benchmarks' },
  // A real PostgreSQL for the PostgreSQL store's tests, each run its own server in a temporary folder
  // (tests/support/postgres.ts). The server itself needs none: it connects to the database DATABASE_URL names.
  postgresql: { command: 'pg_ctlcluster', part: 'tests', for: 'the PostgreSQL store tests' },
} as const satisfies Record<string, SystemPackage>

/** Who asks: the parts whose packages it needs, how to name them, and the command to run again once installed. */
const PURPOSES = {
  setup: { parts: ['server'], who: 'agentmarket', again: 'bun install' },
  test: { parts: ['server', 'tests', 'benchmarks'], who: 'agentmarket tests', again: 'bun run test' },
} as const satisfies Record<string, { parts: Part[]; who: string; again: string }>

type Purpose = keyof typeof PURPOSES

const PATH = process.env.PATH ?? ''
const which = (command: string) => Bun.which(command, { PATH })

/** The Debian names of the packages `purpose` needs whose command is not on PATH. */
function missingFor(purpose: Purpose): string[] {
  const parts: readonly Part[] = PURPOSES[purpose].parts
  return Object.entries(SYSTEM_PACKAGES)
    .filter(([, needed]) => parts.includes(needed.part) && !which(needed.command))
    .map(([debian]) => debian)
}

/** Runs a command found on PATH, its output shown; its exit code, or null when it is not on PATH. */
function run(command: string, args: string[], env: Record<string, string> = {}): number | null {
  const path = which(command)
  if (!path) return null
  return Bun.spawnSync([path, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  }).exitCode
}

/** What a command found on PATH prints on stdout, its stderr dropped, with its exit code; null when not on PATH. */
function probe(command: string, args: string[]): { code: number; stdout: string } | null {
  const path = which(command)
  if (!path) return null
  const done = Bun.spawnSync([path, ...args], { env: process.env, stdio: ['ignore', 'pipe', 'ignore'] })
  return { code: done.exitCode, stdout: done.stdout.toString() }
}

/** How this user may install: as root, through sudo without a password (`sudo -n` asks none), or not at all. */
function installer(): 'root' | 'sudo' | null {
  if (probe('id', ['-u'])?.stdout.trim() === '0') return 'root'
  return probe('sudo', ['-n', 'true'])?.code === 0 ? 'sudo' : null
}

/** "a (x) and b (y)": the packages with what needs each. */
function listed(debian: string[]): string {
  const named = debian.map((name) => `${name} (${SYSTEM_PACKAGES[name as keyof typeof SYSTEM_PACKAGES].for})`)
  return named.length > 1 ? `${named.slice(0, -1).join(', ')} and ${named.at(-1)}` : (named[0] ?? '')
}

/** The one line for a user who must install the packages themselves. */
function askLine(purpose: Purpose, missing: string[]): string {
  const { who, again } = PURPOSES[purpose]
  if (!which('apt-get'))
    return `${who} need ${listed(missing)} on PATH, and this machine has no apt-get: install them with its package manager, then run ${again} again`
  const sudo = which('sudo') ? 'sudo ' : ''
  const command = `${sudo}apt-get update && ${sudo}apt-get install -y ${missing.join(' ')}`
  return `${who} need ${listed(missing)}: run  ${command}  ${sudo ? '' : '(as root) '}then run ${again} again`
}

/** apt-get update and install, non-interactive; the first failing step's message, or null when both passed. */
function aptInstall(as: 'root' | 'sudo', missing: string[]): string | null {
  for (const step of [
    ['update', '-qq'],
    ['install', '-y', '-qq', ...missing],
  ]) {
    const code =
      as === 'root'
        ? run('apt-get', step, { DEBIAN_FRONTEND: 'noninteractive' })
        : run('sudo', ['-n', 'env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', ...step])
    if (code !== 0) return `apt-get ${step.join(' ')} failed (exit ${code})`
  }
  return null
}

/** Makes sure `purpose`'s packages are installed; resolves to the exit code. */
export function ensureSystemPackages(purpose: Purpose): number {
  const missing = missingFor(purpose)
  if (missing.length === 0) return 0
  const { who, again } = PURPOSES[purpose]
  const as = which('apt-get') ? installer() : null
  if (!as) {
    console.error(askLine(purpose, missing))
    return 1
  }
  console.error(`${who} need ${listed(missing)}: installing ${missing.join(' ')} with apt-get`)
  const failed = aptInstall(as, missing)
  const still = missingFor(purpose)
  if (failed || still.length) {
    console.error(
      `${who}: ${failed ?? `${still.join(', ')} still not on PATH after apt-get`}; fix that, then run ${again} again`,
    )
    return 1
  }
  return 0
}

if (import.meta.main) {
  const purpose = process.argv[2]
  if (purpose !== 'setup' && purpose !== 'test') {
    console.error('usage: bun scripts/system-deps.ts setup|test')
    process.exit(2)
  }
  process.exit(ensureSystemPackages(purpose))
}
