import { describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

// The test PostgreSQL servers (postgres.ts) live in /tmp/agentmarket-pg-* folders. A process that ended without their
// stop() left the folder, and the server running, behind: a test that failed before its stop(), and `bun test -t`
// filtering out every test of a describe that starts one (its afterAll never runs; bun test emits no 'exit').

const HELPER = join(import.meta.dir, 'postgres.ts')
const ROOT = join(import.meta.dir, '..', '..')

/** True while `pid` runs (a zombie waiting for its parent to reap it has ended). */
function running(pid: number): boolean {
  const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, 'utf8') : ''
  return stat !== '' && !/^\d+ \(.*\) Z/.test(stat)
}

/** Code that starts a server and writes its folder and postmaster's pid to `into`. */
const startingInto = (into: string) => `
  const server = await startPostgres()
  const postmaster = Number(readFileSync(server.folder + '/data/postmaster.pid', 'utf8').split('\\n')[0])
  writeFileSync(${JSON.stringify(into)}, JSON.stringify({ folder: server.folder, postmaster }))
`

/** Runs `command` in the repository (its bunfig.toml) to its end; then what the child wrote to `into`. */
async function leftBy(command: string[], into: string) {
  const child = Bun.spawn(command, { cwd: ROOT, stdout: 'ignore', stderr: 'ignore' })
  await child.exited
  return JSON.parse(readFileSync(into, 'utf8')) as { folder: string; postmaster: number }
}

/** Expects neither the folder nor the server to be left. */
async function expectNothingLeft({ folder, postmaster }: { folder: string; postmaster: number }) {
  expect(folder).toContain('agentmarket-pg-')
  expect(existsSync(folder)).toBe(false)
  // Killed before the process ended: gone once the kernel has delivered the signal (a generous number of looks).
  for (let look = 0; look < 1_000 && running(postmaster); look++) await Bun.sleep(10)
  expect(running(postmaster)).toBe(false)
}

describe('test PostgreSQL servers', () => {
  test('a process that exits without stopping its server leaves neither its folder nor its server behind', async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'agentmarket-leftovers-'))
    try {
      const into = join(scratch, 'server.json')
      const script = `
        import { readFileSync, writeFileSync } from 'node:fs'
        import { startPostgres } from ${JSON.stringify(HELPER)}
        ${startingInto(into)}
        // A script that failed before its stop().
        process.exit(1)
      `
      await expectNothingLeft(await leftBy(['bun', '-e', script], into))
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  })

  test('a bun test run that filters out every test of the describe starting a server (its afterAll never runs) leaves nothing behind', async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'agentmarket-leftovers-'))
    try {
      const into = join(scratch, 'server.json')
      const file = join(scratch, 'leftover.test.ts')
      writeFileSync(
        file,
        `
        import { afterAll, describe, test } from 'bun:test'
        import { readFileSync, writeFileSync } from 'node:fs'
        import { startPostgres } from ${JSON.stringify(HELPER)}
        describe('on PostgreSQL', async () => {
          ${startingInto(into)}
          afterAll(() => server.stop())
          test('uses the server', () => {})
        })
        test('runs alone', () => {})
      `,
      )
      await expectNothingLeft(await leftBy(['bun', 'test', file, '-t', 'runs alone'], into))
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  })
})
