import { afterAll, describe, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import rootPackage from '../package.json' with { type: 'json' }

const script = join(import.meta.dir, 'system-deps.ts')
const folders: string[] = []
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true })
})

/** A stand-in command: a shell script that appends `name args` (and DEBIAN_FRONTEND) to calls.log, then `body`. */
function stub(bin: string, name: string, body = 'exit 0') {
  const log = join(bin, 'calls.log')
  const text = `#!/bin/sh\necho "${name} $* [\${DEBIAN_FRONTEND:-}]" >> '${log}'\n${body}\n`
  writeFileSync(join(bin, name), text)
  chmodSync(join(bin, name), 0o755)
}

/**
 * A machine made of stand-ins, the only folder on PATH: `id` says the user (0 for root), `sudo` lets through or
 * asks for a password, `apt-get` (when present) "installs" a package by creating its command here. Nothing real
 * is installed.
 */
function machine(options: {
  uid: number
  sudo?: 'passwordless' | 'password'
  aptGet?: 'works' | 'fails'
  has?: string[]
}) {
  const bin = mkdtempSync(join(tmpdir(), 'agentmarket-system-deps-'))
  folders.push(bin)
  stub(bin, 'id', `echo ${options.uid}`)
  if (options.sudo === 'passwordless')
    stub(bin, 'sudo', '[ "$1" = -n ] && shift; [ "$1" = true ] && exit 0; exec "$@"')
  if (options.sudo === 'password') stub(bin, 'sudo', 'echo "sudo: a password is required" >&2; exit 1')
  // What sudo runs: `env DEBIAN_FRONTEND=noninteractive apt-get …`.
  stub(bin, 'env', 'export "$1"; shift; exec "$@"')
  if (options.aptGet === 'works')
    stub(
      bin,
      'apt-get',
      // A package's command is its name, but postgresql's (pg_ctlcluster, from postgresql-common).
      `[ "$1" = install ] && for p in "$@"; do case "$p" in -*|install) ;; *) c="$p"; [ "$p" = postgresql ] && c=pg_ctlcluster; printf '#!/bin/sh\\n' > "${bin}/$c"; /bin/chmod +x "${bin}/$c";; esac; done; exit 0`,
    )
  if (options.aptGet === 'fails') stub(bin, 'apt-get', 'exit 100')
  for (const command of options.has ?? []) stub(bin, command)
  return bin
}

/** Runs the real script on that machine; `calls` is every stand-in called, in order, without the probes by `id`. */
async function systemDeps(bin: string, purpose = 'test') {
  const child = Bun.spawn([process.execPath, script, purpose], {
    env: { PATH: bin },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  const log = join(bin, 'calls.log')
  const calls = existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : []
  return { exitCode, stdout, stderr, calls: calls.filter((call) => !call.startsWith('id ')) }
}

describe('scripts/system-deps.ts', () => {
  test('behavior: a user who may not install gets one line with the exact command, exit 1, and nothing is run', async () => {
    const run = await systemDeps(machine({ uid: 1000, sudo: 'password', aptGet: 'works' }))
    expect(run.exitCode).toBe(1)
    expect(run.stdout).toBe('')
    expect(run.stderr).toBe(
      'agentmarket tests need chromium (the browser tests), wrk (the benchmarks) and postgresql (the PostgreSQL ' +
        'store tests): run  sudo apt-get update && sudo apt-get install -y chromium wrk postgresql  then run bun run ' +
        'test again\n',
    )
    expect(run.calls).toEqual(['sudo -n true []'])
  })

  test('behavior: without sudo the line says to run apt-get as root; without apt-get, to use the package manager', async () => {
    const noSudo = await systemDeps(machine({ uid: 1000, aptGet: 'works', has: ['wrk', 'pg_ctlcluster'] }))
    expect(noSudo.exitCode).toBe(1)
    expect(noSudo.stderr).toBe(
      'agentmarket tests need chromium (the browser tests): run  apt-get update && apt-get install -y chromium  ' +
        '(as root) then run bun run test again\n',
    )
    const noApt = await systemDeps(machine({ uid: 0 }))
    expect(noApt.exitCode).toBe(1)
    expect(noApt.stderr).toStartWith(
      'agentmarket tests need chromium (the browser tests), wrk (the benchmarks) and postgresql (the PostgreSQL store tests) on PATH',
    )
    expect(noApt.stderr).toContain('install them with its package manager, then run bun run test again\n')
    expect(noApt.stderr.trimEnd().split('\n')).toHaveLength(1)
  })

  test('behavior: root installs what is missing with apt-get, non-interactive, and passes once it is on PATH', async () => {
    const bin = machine({ uid: 0, aptGet: 'works', has: ['wrk', 'pg_ctlcluster'] })
    const run = await systemDeps(bin)
    expect(run.exitCode).toBe(0)
    expect(run.calls).toEqual([
      'apt-get update -qq [noninteractive]',
      'apt-get install -y -qq chromium [noninteractive]',
    ])
    expect(existsSync(join(bin, 'chromium'))).toBe(true)
    // Once there, nothing more is done.
    expect((await systemDeps(bin)).calls).toEqual(run.calls)
  })

  test('behavior: a user with passwordless sudo installs through sudo', async () => {
    const run = await systemDeps(machine({ uid: 1000, sudo: 'passwordless', aptGet: 'works' }))
    expect(run.exitCode).toBe(0)
    expect(run.calls).toEqual([
      'sudo -n true []',
      'sudo -n env DEBIAN_FRONTEND=noninteractive apt-get update -qq []',
      'env DEBIAN_FRONTEND=noninteractive apt-get update -qq []',
      'apt-get update -qq [noninteractive]',
      'sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium wrk postgresql []',
      'env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium wrk postgresql []',
      'apt-get install -y -qq chromium wrk postgresql [noninteractive]',
    ])
  })

  test('behavior: a failing apt-get is one line naming the step, exit 1', async () => {
    const run = await systemDeps(machine({ uid: 0, aptGet: 'fails' }))
    expect(run.exitCode).toBe(1)
    expect(run.stderr.trimEnd().split('\n').at(-1)).toBe(
      'agentmarket tests: apt-get update -qq failed (exit 100); fix that, then run bun run test again',
    )
  })

  test('behavior: set-up needs only the server packages (none yet), so it asks nothing of a bare machine', async () => {
    const run = await systemDeps(machine({ uid: 1000, sudo: 'password', aptGet: 'works' }), 'setup')
    expect(run).toEqual({ exitCode: 0, stdout: '', stderr: '', calls: [] })
  })

  test('behavior: bun install runs the set-up check, and bun run test the full one before any test', () => {
    expect(rootPackage.scripts.postinstall).toBe('bun scripts/system-deps.ts setup')
    expect(rootPackage.scripts.test).toStartWith('bun scripts/system-deps.ts test && ')
  })
})
