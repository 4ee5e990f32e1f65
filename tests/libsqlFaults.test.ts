import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from '@agentmarket/store-libsql'
import type { Subprocess } from 'bun'
import { freePort, type MarketServer, readUntil, startMarketServer } from './support/process.ts'
import { fillDisk, mountSmallDisk } from './support/smallDisk.ts'

// The default libSQL file store under the faults of its disk and its lock (issue 39): a full disk answers 507 and
// frees itself, a lock held by another process answers 503 while serving and is told, waited on and given up at start.
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-libsql-faults-'))
const repoRoot = new URL('..', import.meta.url).pathname
const children: Subprocess[] = []
afterAll(() => {
  for (const child of children) child.kill()
  rmSync(folder, { recursive: true, force: true })
})

/** Registers agent `name` with a long bio (each one needs fresh pages on disk). */
const register = (server: MarketServer, name: string) =>
  fetch(`${server.base}/api/agents/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, bio: 'b'.repeat(1000) }),
  })

/** A process of `bun -e` holding an exclusive transaction on the SQLite file `path` until it is killed. */
async function holdLock(path: string): Promise<Subprocess<'ignore', 'pipe', 'inherit'>> {
  const script = `const { Database } = require('bun:sqlite')
    const db = new Database(process.argv[1])
    db.run('BEGIN EXCLUSIVE')
    console.log('held')
    setInterval(() => {}, 60_000)`
  const holder = Bun.spawn(['bun', '-e', script, path], { stdout: 'pipe', stderr: 'inherit' })
  children.push(holder)
  expect(await readUntil(holder.stdout, (text) => text.includes('held'), 60_000)).toContain('held')
  return holder
}

/** A new libSQL file, migrated (as a server that ran once leaves it). */
async function migratedFile(name: string): Promise<string> {
  const path = join(folder, name)
  ;(await openDatabase(`file:${path}`)).close()
  return path
}

/** Runs the server with `env` to its end; its exit code and what it printed on stderr. */
async function startToEnd(env: Record<string, string>) {
  const child = Bun.spawn(['bun', 'packages/server/src/main.ts'], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOST: '127.0.0.1', RATE_LIMITS: 'off', ...env },
    stdout: 'ignore',
    stderr: 'pipe',
  })
  children.push(child)
  const [stderr, exitCode] = await Promise.all([new Response(child.stderr).text(), child.exited])
  return { exitCode, stderr }
}

const disk = mountSmallDisk('16m')
if ('refused' in disk)
  console.warn(`SKIPPED the full-disk test: cannot mount a small tmpfs (${disk.refused})`)

describe('libSQL faults', () => {
  test.skipIf('refused' in disk)(
    'behavior: on a full disk every write answers 507 storage_full with Retry-After and changes nothing, reads answer, the log says so, and writes resume once space is freed',
    async () => {
      if (!('path' in disk)) return
      const server = await startMarketServer(
        { DATABASE_URL: `file:${join(disk.path, 'market.db')}` },
        { stdout: 'pipe' },
      )
      try {
        expect((await register(server, 'before-full')).status).toBe(200)
        const filler = fillDisk(disk.path)
        // Space SQLite already holds (its log's pages) may take a few more writes; the first refusal comes soon after.
        let refused: Response | undefined
        let landed = 0
        for (let attempt = 0; attempt < 5_000 && !refused; attempt++) {
          const answer = await register(server, `while-full-${attempt}`)
          if (answer.status === 200) landed++
          else refused = answer
        }
        if (!refused) throw new Error(`no write was refused in ${landed} writes on a full disk`)
        expect(refused.status).toBe(507)
        expect(refused.headers.get('retry-after')).toBe('30')
        expect(((await refused.json()) as { code: string }).code).toBe('storage_full')
        for (const name of ['full-a', 'full-b', 'full-c']) {
          const answer = await register(server, name)
          expect(answer.status).toBe(507)
          expect(((await answer.json()) as { code: string }).code).toBe('storage_full')
        }
        // Reads answer, and show nothing of the refused writes.
        const agents = await fetch(`${server.base}/api/community/agents?limit=100`)
        expect(agents.status).toBe(200)
        expect(((await agents.json()) as { total: number }).total).toBe(1 + landed)
        expect((await fetch(`${server.base}/api/community/agents/full-a`)).status).toBe(404)
        // Each refusal is one warning naming the fault and SQLite's code (and a background pass says it waits).
        const log = await readUntil(
          server.process.stdout as ReadableStream<Uint8Array>,
          (text) => text.includes('"cause":"SQLITE_FULL"'),
          60_000,
        )
        expect(log).toContain('"msg":"dependency fault"')
        expect(log).toContain('"code":"storage_full"')
        // Health tells the truth: not ready while writes cannot land.
        const health = await fetch(`${server.base}/api/community/health`)
        expect(health.status).toBe(503)
        expect(((await health.json()) as { database: string }).database).toBe('error')

        unlinkSync(filler)
        expect((await fetch(`${server.base}/api/community/health`)).status).toBe(200)
        // The same name registers now: the refused write left nothing behind to collide with.
        expect((await register(server, 'full-a')).status).toBe(200)
        expect((await fetch(`${server.base}/api/community/agents/full-a`)).status).toBe(200)
      } finally {
        server.stop()
        await server.process.exited
        Bun.spawnSync(['umount', disk.path])
        rmSync(disk.path, { recursive: true, force: true })
      }
    },
    120_000,
  )

  test.skipIf('refused' in disk)(
    'behavior: with RATE_LIMITS on, a full disk still serves reads (the buckets fall back to the process), still limits them, refuses writes 507 with Retry-After, and writes resume once space is freed',
    async () => {
      const small = mountSmallDisk('16m')
      if (!('path' in small)) throw new Error(`cannot mount a second small tmpfs: ${small.refused}`)
      // Reads are limited to 20 an hour, so each read takes from the shared bucket (a lease of one token) and the
      // limit is reached in a few requests; registrations are left generous: the disk is filled by registering.
      const readLimit = 20
      const server = await startMarketServer({
        DATABASE_URL: `file:${join(small.path, 'market.db')}`,
        RATE_LIMITS: 'on',
        RATE_LIMIT_POLICIES: `read=${readLimit}/3600,register=100000/3600,register_attempt=100000/3600`,
      })
      const read = () => fetch(`${server.base}/api/community/agents/before-full`)
      try {
        expect((await register(server, 'before-full')).status).toBe(200)
        expect((await read()).status).toBe(200)
        const filler = fillDisk(small.path)
        let refused: Response | undefined
        for (let attempt = 0; attempt < 5_000 && !refused; attempt++) {
          const answer = await register(server, `while-full-${attempt}`)
          if (answer.status !== 200) refused = answer
        }
        expect(refused?.status).toBe(507)
        // Reads answer while the disk is full, and the read limit still holds: at most the limit from this process's
        // own buckets besides what the shared one had left, then 429.
        const statuses: number[] = []
        let limited: Response | undefined
        while (!limited && statuses.length <= 2 * readLimit) {
          const answer = await read()
          statuses.push(answer.status)
          if (answer.status === 429) limited = answer
        }
        expect(statuses.slice(0, -1).every((status) => status === 200)).toBe(true)
        expect(statuses.length).toBeGreaterThan(1)
        expect(limited?.status).toBe(429)
        expect(Number(limited?.headers.get('retry-after'))).toBeGreaterThan(0)
        // Writes are refused as the disk is full, not by a limit.
        const write = await register(server, 'full-a')
        expect(write.status).toBe(507)
        expect(write.headers.get('retry-after')).toBe('30')
        expect(((await write.json()) as { code: string }).code).toBe('storage_full')

        unlinkSync(filler)
        expect((await register(server, 'full-a')).status).toBe(200)
      } finally {
        server.stop()
        await server.process.exited
        Bun.spawnSync(['umount', small.path])
        rmSync(small.path, { recursive: true, force: true })
      }
    },
    120_000,
  )

  test('behavior: a write while another process holds the database locked answers 503 database_unavailable with Retry-After; reads answer; writes resume when it lets go', async () => {
    const path = await migratedFile('busy.db')
    const server = await startMarketServer({ DATABASE_URL: `file:${path}` })
    try {
      expect((await register(server, 'before-lock')).status).toBe(200)
      const holder = await holdLock(path)
      const answer = await register(server, 'while-locked')
      expect(answer.status).toBe(503)
      expect(answer.headers.get('retry-after')).not.toBeNull()
      expect(((await answer.json()) as { code: string }).code).toBe('database_unavailable')
      expect((await fetch(`${server.base}/api/community/agents/before-lock`)).status).toBe(200)
      holder.kill()
      await holder.exited
      expect((await register(server, 'while-locked')).status).toBe(200)
    } finally {
      server.stop()
      await server.process.exited
    }
  }, 300_000)

  test('behavior: a start on a database another process holds locked says so in one line, waits DATABASE_LOCK_WAIT_SECONDS, then exits 1', async () => {
    const path = await migratedFile('locked.db')
    const holder = await holdLock(path)
    const { exitCode, stderr } = await startToEnd({
      DATABASE_URL: `file:${path}`,
      PORT: String(freePort()),
      DATABASE_LOCK_WAIT_SECONDS: '1',
    })
    holder.kill()
    expect(exitCode).toBe(1)
    const lines = stderr.trim().split('\n')
    expect(lines[0]).toBe(
      `agentmarket: database ${path} is locked by another process; waiting up to 1 s for it (DATABASE_LOCK_WAIT_SECONDS)`,
    )
    expect(lines.at(-1)).toBe(
      `agentmarket: cannot start: database ${path} stayed locked by another process for 1 s; stop that process (or let it finish) and start again`,
    )
  }, 300_000)

  test('behavior: a start on a file that is not a database exits 1 with one line naming the file', async () => {
    const path = join(folder, 'not-a-database.db')
    writeFileSync(
      path,
      'this is not a SQLite database, only text long enough to be read as a header.'.repeat(20),
    )
    const { exitCode, stderr } = await startToEnd({ DATABASE_URL: `file:${path}`, PORT: String(freePort()) })
    expect(exitCode).toBe(1)
    expect(stderr.trim()).toBe(
      `agentmarket: cannot start: database ${path} cannot be used: file is not a database`,
    )
  }, 300_000)

  test('behavior: a second server on a port in use exits 1 with one line naming the port, unless both set REUSE_PORT=on', async () => {
    const first = await startMarketServer({ DATABASE_URL: `file:${join(folder, 'first.db')}` })
    try {
      const port = new URL(first.base).port
      const second = await startToEnd({ DATABASE_URL: `file:${join(folder, 'second.db')}`, PORT: port })
      expect(second.exitCode).toBe(1)
      expect(second.stderr.trim()).toBe(
        `agentmarket: cannot start: port ${port} on 127.0.0.1 is already in use by another process; stop it or set another PORT (REUSE_PORT=on shares the port on purpose)`,
      )
    } finally {
      first.stop()
      await first.process.exited
    }
    // Asked for by both: they share the port.
    const shared = await startMarketServer({
      DATABASE_URL: `file:${join(folder, 'shared.db')}`,
      REUSE_PORT: 'on',
    })
    try {
      const port = new URL(shared.base).port
      const sharing = Bun.spawn(['bun', 'packages/server/src/main.ts'], {
        cwd: repoRoot,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOST: '127.0.0.1',
          PORT: port,
          REUSE_PORT: 'on',
          DATABASE_URL: `file:${join(folder, 'sharing.db')}`,
        },
        stdout: 'pipe',
        stderr: 'inherit',
      })
      children.push(sharing)
      const log = await readUntil(sharing.stdout, (text) => text.includes('"msg":"listening"'), 60_000)
      expect(log).toContain('"msg":"listening"')
      expect(sharing.exitCode).toBeNull()
      sharing.kill()
      await sharing.exited
    } finally {
      shared.stop()
      await shared.process.exited
    }
  }, 300_000)
})
