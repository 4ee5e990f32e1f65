import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startMigratedPostgres } from './support/postgres.ts'
import { type MarketServer, startMarketServer } from './support/process.ts'
import { type SharedDatabase, sharedPostgres } from './support/sharedDatabase.ts'

// Three `bun start` nodes on one PostgreSQL, which is restarted (a fast shutdown, as `pg_ctl restart` does) three
// times under a steady write load (issue 39). Verdicts are on what the clients saw and what the database kept; the
// times to recover are printed figures (docs/operations.md), never asserted.

/**
 * A request still unanswered after this long counts as a hang. The promise is an answer within 2 s (the store's 1.5 s
 * deadline); the issue saw 30-78 s. The margin keeps a loaded machine from failing the test on speed alone.
 */
const HANG_MS = 15_000

const postgresServer = await startMigratedPostgres()
const nodes: MarketServer[] = []
let database: SharedDatabase

beforeAll(async () => {
  database = await sharedPostgres(postgresServer)
  for (let index = 0; index < 3; index++)
    nodes.push(
      await startMarketServer({ DATABASE_URL: database.url, BASE_URL: 'https://restarts.market.test' }),
    )
}, 300_000)

afterAll(async () => {
  for (const node of nodes) node.stop()
  await database?.close()
  await postgresServer.stop()
})

/** What one write attempt got: its status, its problem code, and whether it carried Retry-After. */
type Attempt = { node: number; name: string; status: number; code?: string; retryAfter: boolean; at: number }

/** One registration on `node`, its answer as an Attempt (status 0: no answer within HANG_MS or no connection). */
async function register(node: number, name: string): Promise<Attempt> {
  const at = performance.now()
  const target = nodes[node] as MarketServer
  try {
    const response = await fetch(`${target.base}/api/agents/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name }),
      signal: AbortSignal.timeout(HANG_MS),
    })
    const body = (await response.json()) as { code?: string }
    const retryAfter = response.headers.has('retry-after')
    return { node, name, status: response.status, retryAfter, at, ...(body.code ? { code: body.code } : {}) }
  } catch {
    return { node, name, status: 0, retryAfter: false, at }
  }
}

/** A steady writer per node, one registration after another, until stopped; every attempt is kept. */
function writeLoad() {
  const attempts: Attempt[] = []
  let running = true
  let count = 0
  const writers = nodes.map(async (_, node) => {
    while (running) {
      attempts.push(await register(node, `load-${node}-${count++}`))
      await Bun.sleep(5)
    }
  })
  return {
    attempts,
    /** Resolves once every node has acknowledged a write that started after `since` (performance.now()). */
    async servedSince(since: number) {
      const served = () =>
        nodes.every((_, node) => attempts.some((a) => a.node === node && a.status === 200 && a.at >= since))
      while (!served()) await Bun.sleep(10)
      return performance.now()
    },
    async stop() {
      running = false
      await Promise.all(writers)
    },
  }
}

/** Polls every node's readiness until each answers `status`; the time that took. */
async function readiness(status: number) {
  const started = performance.now()
  await Promise.all(
    nodes.map(async (node) => {
      for (;;) {
        const answer = await fetch(`${node.base}/api/health/ready`).then((response) => response.status)
        if (answer === status) return
        await Bun.sleep(10)
      }
    }),
  )
  return performance.now() - started
}

describe('PostgreSQL restarted under load, three nodes', () => {
  test('behavior: every node survives three restarts, answers only 2xx or 503 with Retry-After, serves writes again, and no acknowledged write is lost or doubled', async () => {
    const load = writeLoad()
    const figures: { unready: number; ready: number; writes: number }[] = []
    for (let restart = 0; restart < 3; restart++) {
      await load.servedSince(performance.now())
      await postgresServer.halt()
      const unready = await readiness(503)
      // A write attempted while the database is down: answered, and 503.
      const down = await register(restart % 3, `down-${restart}`)
      expect(down.status).toBe(503)
      await postgresServer.resume()
      const back = performance.now()
      const ready = await readiness(200)
      const writes = (await load.servedSince(back)) - back
      figures.push({ unready, ready, writes })
    }
    await load.stop()

    for (const node of nodes) expect(node.process.exitCode).toBeNull()
    const answers = load.attempts.map((attempt) => attempt.status)
    const unexpected = load.attempts.filter((attempt) => attempt.status !== 200 && attempt.status !== 503)
    expect(unexpected).toEqual([])
    const refused = load.attempts.filter((attempt) => attempt.status === 503)
    for (const attempt of refused) {
      expect(attempt.retryAfter).toBe(true)
      expect(['database_unavailable', 'outcome_unknown']).toContain(attempt.code as string)
    }

    // Every acknowledged registration is in the database once; none is there twice.
    const acknowledged = load.attempts
      .filter((attempt) => attempt.status === 200)
      .map((attempt) => attempt.name)
    const rows = await database.rows(
      "select name, count(*) as copies from agents where name like 'load-%' group by name",
    )
    const copies = new Map(rows.map((row) => [String(row.name), Number(row.copies)]))
    const lost = acknowledged.filter((name) => !copies.has(name))
    const doubled = [...copies.values()].filter((count) => count > 1)
    console.log(
      `postgres restarts x3, 3 nodes: ${acknowledged.length} acknowledged, ${refused.length} answered 503 ` +
        `(${refused.filter((a) => a.code === 'outcome_unknown').length} outcome_unknown), lost ${lost.length}, ` +
        `duplicated ${doubled.length}; per restart, ms to all unready / all ready again / every node's first write: ` +
        figures.map((f) => `${f.unready.toFixed(0)}/${f.ready.toFixed(0)}/${f.writes.toFixed(0)}`).join(', '),
    )
    expect(lost).toEqual([])
    expect(doubled).toEqual([])
    expect(answers.length).toBeGreaterThan(0)
  }, 300_000)
})
