import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { createClient } from '@libsql/client'
import rootPackage from '../package.json' with { type: 'json' }
import serverPackage from '../packages/server/package.json' with { type: 'json' }
import embeddedMigrations from '../packages/store-libsql/src/migrations.json' with { type: 'json' }
import { freePort, waitForOk } from './support/process.ts'

const root = resolve(import.meta.dir, '..')
const entry = join(root, 'packages/server/src/main.ts')
const folders: string[] = []
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true })
})

/** A new empty folder to run in, as a user's working directory. */
function freshFolder(): string {
  const folder = mkdtempSync(join(tmpdir(), 'agentmarket-cli-'))
  folders.push(folder)
  return folder
}

/**
 * Runs the real entry (what `bun start` and the binary run) with `words`, in `cwd`, with a free PORT. While it runs,
 * the port is knocked on: `listened` says whether anything answered there. A server never exits by itself, so a run
 * still going after 20 s is killed and reported as `exitCode: null`.
 */
async function agentmarket(
  words: string[],
  { cwd = freshFolder(), env = {} as Record<string, string> } = {},
) {
  const port = freePort()
  const child = Bun.spawn(['bun', entry, ...words], {
    cwd,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PORT: String(port), HOST: '127.0.0.1', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let listened = false
  const knocking = (async () => {
    while (child.exitCode === null && child.signalCode === null) {
      if (
        await fetch(`http://127.0.0.1:${port}/`).then(
          () => true,
          () => false,
        )
      )
        listened = true
      await Bun.sleep(20)
    }
  })()
  const timer = setTimeout(() => child.kill(), 20_000)
  const [stdout, stderr] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ])
  await child.exited
  clearTimeout(timer)
  await knocking
  return { exitCode: child.signalCode ? null : child.exitCode, stdout, stderr, listened, cwd }
}

describe('agentmarket on the command line', () => {
  test('behavior: --help, -h and help print the usage and exit 0, with no database, no port, no settings read', async () => {
    for (const words of [['--help'], ['-h'], ['help'], ['demo', '--help']]) {
      // A malformed variable would stop a server: help reads none.
      const run = await agentmarket(words, { env: { PORT: 'not-a-port' } })
      expect(run.exitCode, words.join(' ')).toBe(0)
      expect(run.stdout).toStartWith(`agentmarket ${serverPackage.version}: `)
      for (const word of ['serve', 'demo', 'migrate', 'bench', '--version', 'DATABASE_URL', 'README.md'])
        expect(run.stdout).toContain(word)
      expect(run.stderr).toBe('')
      expect(readdirSync(run.cwd)).toEqual([])
    }
  })

  test('behavior: bench --help prints the benchmark and its options, exit 0, with no settings read', async () => {
    const run = await agentmarket(['bench', 'verify', '--help'], { env: { PORT: 'not-a-port' } })
    expect(run.exitCode).toBe(0)
    expect(run.stdout).toStartWith('Usage: agentmarket bench verify (--generate N | --hashes FILE)')
    expect(run.stderr).toBe('')
    expect(readdirSync(run.cwd)).toEqual([])
  })

  test('behavior: --version and -v print the version of the server package and exit 0, starting nothing', async () => {
    for (const words of [['--version'], ['-v']]) {
      const run = await agentmarket(words)
      expect(run.exitCode).toBe(0)
      expect(run.stdout).toBe(`${serverPackage.version}\n`)
      expect(run.listened).toBe(false)
      expect(readdirSync(run.cwd)).toEqual([])
    }
  })

  test('behavior: a typo is one line on stderr naming the word and the closest command, exit 2, nothing started', async () => {
    const cases: [string[], RegExp][] = [
      [['serv'], /^agentmarket: unknown command "serv" \(did you mean "serve"\?\); run agentmarket --help/],
      [
        ['--hlep'],
        /^agentmarket: unknown option "--hlep" \(did you mean "--help"\?\); run agentmarket --help/,
      ],
      [['launch'], /^agentmarket: unknown command "launch"; run agentmarket --help/],
      [['migrate', 'now'], /^agentmarket: unexpected argument "now" after migrate; run agentmarket --help/],
      [
        ['bench', 'verfy'],
        /^agentmarket: unknown benchmark "verfy" \(did you mean "verify"\?\); run agentmarket bench --help/,
      ],
      [
        ['bench', 'verify', '--generat', '5'],
        /^agentmarket: unknown option "--generat" \(did you mean "--generate"\?\)/,
      ],
      [
        ['bench', 'verify'],
        /^agentmarket: bench verify needs --generate N or --hashes FILE; run agentmarket bench --help/,
      ],
    ]
    for (const [words, expected] of cases) {
      const run = await agentmarket(words)
      expect(run.exitCode, words.join(' ')).toBe(2)
      expect(run.stderr).toMatch(expected)
      expect(run.stderr.trimEnd().split('\n')).toHaveLength(1)
      expect(run.stdout).toBe('')
      expect(run.listened).toBe(false)
      expect(existsSync(join(run.cwd, 'data'))).toBe(false)
    }
  })

  test('behavior: migrate applies what is pending to DATABASE_URL, says which, and exits; a second run applies none', async () => {
    const cwd = freshFolder()
    const env = { DATABASE_URL: 'file:./db/market.db' }
    const first = await agentmarket(['migrate'], { cwd, env })
    expect(first.exitCode).toBe(0)
    const all = embeddedMigrations.map((_, number) => String(number).padStart(4, '0'))
    expect(first.stdout).toBe(
      `agentmarket migrate: applied ${all.length} of ${all.length} migrations to file:./db/market.db: ${all.join(', ')}\n`,
    )
    expect(first.listened).toBe(false)
    const database = createClient({ url: `file:${join(cwd, 'db/market.db')}` })
    const tables = await database.execute(
      "select name from sqlite_master where type = 'table' and name = 'agents'",
    )
    expect(tables.rows).toHaveLength(1)
    const applied = await database.execute('select count(*) as n from "__drizzle_migrations"')
    expect(Number(applied.rows[0]?.n)).toBe(all.length)
    database.close()

    const second = await agentmarket(['migrate'], { cwd, env })
    expect(second.exitCode).toBe(0)
    expect(second.stdout).toBe(
      `agentmarket migrate: file:./db/market.db is up to date (${all.length} migrations, the last ${all.at(-1)})\n`,
    )
    const malformed = await agentmarket(['migrate'], { env: { DATABASE_URL: 'mysql://x' } })
    expect(malformed.exitCode).toBe(1)
    expect(malformed.stderr).toStartWith('agentmarket: DATABASE_URL="mysql://x" is invalid')
  })

  test('behavior: serve, like no command at all, starts the server', async () => {
    const port = freePort()
    const child = Bun.spawn(['bun', entry, 'serve'], {
      cwd: freshFolder(),
      env: { PATH: process.env.PATH ?? '', PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: ':memory:' },
      stdout: 'ignore',
      stderr: 'inherit',
    })
    try {
      await waitForOk(`http://127.0.0.1:${port}/api/community/health`, child)
    } finally {
      child.kill()
      await child.exited
    }
  })

  test('behavior: the demo ends with the command that starts the server on the database it filled', async () => {
    const folder = freshFolder()
    const port = freePort()
    const databaseUrl = `file:${join(folder, 'demo.db')}`
    const env = { DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1' }
    const demo = await agentmarket(['demo'], { cwd: root, env })
    expect(demo.exitCode).toBe(0)
    const hint = `  DATABASE_URL=${databaseUrl} PORT=${port} HOST=127.0.0.1 bun start\n`
    expect(demo.stdout).toContain(`Next, start the server on it:\n${hint}`)
    // Do what the hint says (`bun start` is the start script, run here directly so the test can stop it).
    expect(rootPackage.scripts.start).toBe('bun packages/server/src/main.ts')
    const said = Object.fromEntries(
      hint
        .trim()
        .split(' ')
        .filter((word) => word.includes('='))
        .map((word) => word.split(/=(.*)/s).slice(0, 2) as [string, string]),
    )
    const server = Bun.spawn(['bun', entry], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', RATE_LIMITS: 'off', ...said },
      stdout: 'ignore',
      stderr: 'inherit',
    })
    try {
      await waitForOk(`http://127.0.0.1:${port}/api/community/health`, server)
      const listed = (await (
        await fetch(`http://127.0.0.1:${port}/api/community/agents?limit=1`)
      ).json()) as {
        total: number
      }
      expect(listed.total).toBe(36)
    } finally {
      server.kill()
      await server.exited
    }
  })
})
