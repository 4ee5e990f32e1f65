import { Database } from 'bun:sqlite'
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startMarketServer } from './support/process.ts'

// The libSQL store writes its search index in batches (store-libsql searchIndex.ts): agents registered since the last
// pass are the tail, read by every search. These drive `bun start` over HTTP and look at the file beside it.

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-search-tail-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))
// Registrations a cycle may send before it sees a tail to kill the server on (one is enough on an idle machine).
const MAX_BEFORE_KILL = 200
const CYCLES = 5

/** Runs `read` on a read-only connection to the server's file (WAL: it sees every committed write). */
function inFile<T>(file: string, read: (db: Database) => T): T {
  const db = new Database(file, { readonly: true })
  try {
    return read(db)
  } finally {
    db.close()
  }
}

/** The search index's watermark and the largest agent rowid in the file: agents past the watermark are the tail. */
const indexState = (file: string) =>
  inFile(file, (db) => ({
    through: (db.query('select through from agent_search_indexed').get() as { through: number }).through,
    newest: (db.query('select coalesce(max(rowid), 0) as newest from agents').get() as { newest: number })
      .newest,
  }))

/** How many entries of the search index in the file hold `word`. */
const indexed = (file: string, word: string) =>
  inFile(
    file,
    (db) =>
      (
        db.query('select count(*) as n from agent_search where agent_search match ?').get(`"${word}"`) as {
          n: number
        }
      ).n,
  )

/** The names a search of `q` lists, and its total, as a client reads them. */
async function search(base: string, q: string) {
  const page = (await (await fetch(`${base}/api/community/agents?q=${q}&limit=100`)).json()) as {
    agents: { name: string }[]
    total: number
  }
  return { names: page.agents.map((agent) => agent.name).sort(), total: page.total }
}

/** Registers `name` with a bio holding its own search word; true once answered 200. */
async function register(base: string, name: string) {
  const response = await fetch(`${base}/api/agents/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, bio: `Finds ${name}word fast` }),
  })
  return response.status === 200
}

describe('search over the unindexed tail', () => {
  test('behavior: an agent is found the moment its registration is answered, while it is in the tail', async () => {
    const file = join(folder, 'at-once.db')
    const server = await startMarketServer({ DATABASE_URL: `file:${file}` })
    try {
      let foundInTail = false
      for (let index = 0; index < MAX_BEFORE_KILL && !foundInTail; index++) {
        const name = `fresh${index}`
        expect(await register(server.base, name)).toBe(true)
        expect(await search(server.base, `${name}word`)).toEqual({ names: [name], total: 1 })
        // The words its bio shares with the others: each agent counted once, indexed or not.
        expect((await search(server.base, 'finds')).total).toBe(index + 1)
        // Still past the watermark after the searches (it only moves up): they found it in the tail.
        const { through, newest } = indexState(file)
        foundInTail = newest > through && indexed(file, `${name}word`) === 0
      }
      expect(foundInTail).toBe(true)
    } finally {
      server.stop()
    }
  })

  test('attack: a server SIGKILLed with a tail unindexed loses no entry: the next start indexes it, all are found', async () => {
    const file = join(folder, 'killed.db')
    const registered: string[] = []
    let tailAtKill = 0
    for (let cycle = 0; cycle < CYCLES && tailAtKill === 0; cycle++) {
      const server = await startMarketServer({ DATABASE_URL: `file:${file}` })
      try {
        // The start indexed whatever the last kill left.
        const started = indexState(file)
        expect(started.through).toBe(started.newest)
        // Register until the file shows a tail, then kill at once, before the pass a second later.
        for (let sent = 0; sent < MAX_BEFORE_KILL; sent++) {
          const name = `k${cycle}x${sent}`
          if (await register(server.base, name)) registered.push(name)
          const { through, newest } = indexState(file)
          if (newest > through) break
        }
      } finally {
        server.process.kill('SIGKILL')
        await server.process.exited
      }
      const killed = indexState(file)
      tailAtKill = killed.newest - killed.through
    }
    // Precondition: some kill hit a tail (else the machine never showed one in CYCLES tries).
    expect(tailAtKill).toBeGreaterThan(0)
    const restarted = await startMarketServer({ DATABASE_URL: `file:${file}` })
    try {
      const state = indexState(file)
      expect(state.through).toBe(state.newest)
      for (const name of registered) {
        expect(indexed(file, `${name}word`)).toBe(1)
        expect(await search(restarted.base, `${name}word`)).toEqual({ names: [name], total: 1 })
      }
      expect((await search(restarted.base, 'finds')).total).toBe(registered.length)
    } finally {
      restarted.stop()
    }
  })
})
