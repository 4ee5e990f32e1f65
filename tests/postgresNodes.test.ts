import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sseReader } from '../packages/server/src/testing/sse.ts'
import embeddedMigrations from '../packages/store-postgres/src/migrations.json' with { type: 'json' }
import { startMigratedPostgres, startPostgres } from './support/postgres.ts'
import { type MarketServer, runToEnd, startMarketServer } from './support/process.ts'
import { sharedPostgres } from './support/sharedDatabase.ts'
import { eventually } from './support/until.ts'

// Three `bun start` nodes on one PostgreSQL: what a node shows of the others' writes, and how soon.
const postgresServer = await startMigratedPostgres()
const nodes: MarketServer[] = []

beforeAll(async () => {
  const database = await sharedPostgres(postgresServer)
  await database.close()
  for (let index = 0; index < 3; index++)
    nodes.push(await startMarketServer({ DATABASE_URL: database.url, BASE_URL: 'https://nodes.market.test' }))
})

afterAll(async () => {
  for (const node of nodes) node.stop()
  await postgresServer.stop()
})

/** POSTs JSON to a node; the answer's status and body. */
async function post(node: MarketServer, path: string, body: unknown, key?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (key) headers.authorization = `Bearer ${key}`
  const response = await fetch(`${node.base}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })
  return { status: response.status, json: (await response.json()) as Record<string, unknown> }
}

/** The `at` of node `index`. */
const node = (index: number) => {
  const found = nodes[index]
  if (!found) throw new Error('nodes not started')
  return found
}

describe('three nodes on one PostgreSQL', () => {
  test('behavior: the live feed on node A shows every write made on node C, in order, within a second', async () => {
    const controller = new AbortController()
    const response = await fetch(`${node(0).base}/api/feed/live`, {
      headers: { accept: 'text/event-stream' },
      signal: controller.signal,
    })
    const stream = sseReader(response)
    const delays: number[] = []
    for (let index = 0; index < 20; index++) {
      const acknowledged = performance.now()
      expect((await post(node(2), '/api/agents/register', { name: `fed-${index}` })).status).toBe(200)
      const events = await stream.waitFor(index + 1, 1_000)
      delays.push(performance.now() - acknowledged)
      expect(events[index]?.data).toMatchObject({ kind: 'agent.registered', agent: `fed-${index}` })
    }
    const ids = stream.frames.map((frame) => Number(frame.id))
    expect(ids).toEqual([...ids].sort((a, b) => a - b))
    delays.sort((a, b) => a - b)
    console.log(
      `feed across nodes: p50 ${delays[10]?.toFixed(1)} ms, max ${delays.at(-1)?.toFixed(1)} ms (from C's answer to A's event)`,
    )
    controller.abort()
  })

  test("behavior: a read cached by one node shows another node's write once its change notice is in", async () => {
    const registered = await post(node(0), '/api/agents/register', { name: 'cached-across', bio: 'before' })
    const key = String(registered.json.apiKey)
    const card = () => fetch(`${node(1).base}/api/agents/cached-across/agent-card.json`).then((r) => r.json())
    const record = () => fetch(`${node(1).base}/api/community/agents/cached-across`).then((r) => r.json())
    // Cached on node B.
    expect((await card()).description).toBe('before')
    expect((await record()).bio).toBe('before')
    const put = await fetch(`${node(2).base}/api/agents/cached-across`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ bio: 'after' }),
    })
    expect(put.status).toBe(200)
    const started = performance.now()
    // The change notice's way to the other node depends on the machine: waited for, never for a fixed time.
    await eventually(async () => {
      expect((await record()).bio).toBe('after')
      expect((await card()).description).toBe('after')
    })
    console.log(`cached read across nodes: fresh after ${(performance.now() - started).toFixed(1)} ms`)
  })
})

describe('agentmarket migrate on PostgreSQL', () => {
  test('behavior: migrate applies every migration to a new PostgreSQL database, says which (never its password), and a second run none', async () => {
    const server = await startPostgres()
    try {
      // The test server trusts local connections, so any password passes; it must never be printed.
      const shown = await server.createDatabase()
      const url = shown.replace('market@', 'market:s3cret-pass@')
      const migrate = () =>
        runToEnd(['bun', 'packages/server/src/main.ts', 'migrate'], {
          env: { PATH: process.env.PATH ?? '', DATABASE_URL: url },
        })
      const all = embeddedMigrations.map((_, number) => String(number).padStart(4, '0'))
      const first = await migrate()
      expect(first.stderr).toBe('')
      expect(first.stdout).toBe(
        `agentmarket migrate: applied ${all.length} of ${all.length} migrations to ${shown.replace('market@', 'market:***@')}: ${all.join(', ')}\n`,
      )
      const second = await migrate()
      expect(second.stdout).toBe(
        `agentmarket migrate: ${shown.replace('market@', 'market:***@')} is up to date (${all.length} migrations, the last ${all.at(-1)})\n`,
      )
    } finally {
      await server.stop()
    }
  })
})

describe('DATABASE_TLS', () => {
  test('behavior: require talks TLS to a server whose certificate no CA vouches for; verify-full refuses it, one line, exit 1', async () => {
    const server = await startPostgres({ tls: true })
    try {
      const url = await server.createDatabase()
      const migrate = (tls: string) =>
        runToEnd(['bun', 'packages/server/src/main.ts', 'migrate'], {
          env: { PATH: process.env.PATH ?? '', DATABASE_URL: url, DATABASE_TLS: tls },
        })
      const required = await migrate('require')
      expect(required.stderr).toBe('')
      expect(required.exitCode).toBe(0)
      // The session was encrypted: the server's own view of the connection that migrated (pg_stat_ssl) is gone by
      // now, so a second client asks it of itself with the same settings.
      const { openPostgres } = await import('../packages/store-postgres/src/open.ts')
      const database = await openPostgres(url, { max: 1, ssl: 'require' })
      const [row] = await database.sql`select ssl from pg_stat_ssl where pid = pg_backend_pid()`
      expect(row?.ssl).toBe(true)
      await database.close()
      const verified = await migrate('verify-full')
      expect(verified.exitCode).toBe(1)
      expect(verified.stderr.trim().split('\n')).toHaveLength(1)
      expect(verified.stderr).toStartWith('agentmarket: cannot migrate: ')
    } finally {
      await server.stop()
    }
  })
})
