import { afterAll, expect, test } from 'bun:test'
import { startMigratedPostgres } from './support/postgres.ts'
import { type MarketServer, readUntil, startMarketServer } from './support/process.ts'

// serve.ts's containment of the database driver's uncaught errors (issue 39), in a `bun start` node on PostgreSQL. The
// driver's one known error outside any call (postgres.js's `socket.write` on a closed socket) is patched away
// (patches/postgres@3.4.9.patch), and no way is known to make the patched driver throw one on demand (it handles its
// sockets' errors, and an ErrorResponse with no query, itself). So the error is thrown by a module preloaded into the
// real process (tests/support/driverFaultPreload.ts): an ECONNRESET, as a reset socket raises it, from a setImmediate
// outside any request.
const PRELOAD = new URL('./support/driverFaultPreload.ts', import.meta.url).pathname
const postgresServer = await startMigratedPostgres()
afterAll(() => postgresServer.stop())

/** Registers agent `name`; its status. */
const register = async (server: MarketServer, name: string) =>
  (
    await fetch(`${server.base}/api/agents/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name }),
    })
  ).status

/** The first log line of `log` whose msg is `msg`, parsed. */
const lineOf = (log: string, msg: string) =>
  JSON.parse(log.split('\n').find((line) => line.includes(`"msg":"${msg}"`)) ?? 'null') as Record<
    string,
    unknown
  > | null

test('behavior: a driver error thrown outside any request is logged with a faultId and the node serves on; any other uncaught error still ends the process with exit 1', async () => {
  const server = await startMarketServer(
    { DATABASE_URL: await postgresServer.freshUrl() },
    { stdout: 'pipe', preload: PRELOAD },
  )
  const stdout = server.process.stdout as ReadableStream<Uint8Array>
  try {
    expect(await register(server, 'before-fault')).toBe(200)

    server.process.kill('SIGUSR2')
    const contained = lineOf(
      await readUntil(stdout, (text) => text.includes('database driver fault contained'), 60_000),
      'database driver fault contained',
    )
    expect(contained).toMatchObject({ level: 'error', error: 'Error: read ECONNRESET' })
    expect(String(contained?.faultId)).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    )
    expect(server.process.exitCode).toBeNull()
    expect(await register(server, 'after-fault')).toBe(200)
    expect((await fetch(`${server.base}/api/community/agents/after-fault`)).status).toBe(200)

    // A bug is still a bug: the process logs it and exits 1.
    server.process.kill('SIGUSR2')
    const fatal = lineOf(
      await readUntil(stdout, (text) => text.includes('uncaught exception'), 60_000),
      'uncaught exception',
    )
    expect(fatal).toMatchObject({ level: 'error', error: 'TypeError: a bug outside any request' })
    expect(await server.process.exited).toBe(1)
  } finally {
    server.stop()
    await server.process.exited
  }
}, 300_000)
