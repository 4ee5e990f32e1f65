import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Store } from '@agentmarket/core'
import { libsqlStore, openDatabase } from '@agentmarket/store-libsql'
import { openPostgres, postgresStore } from '@agentmarket/store-postgres'
import postgres from 'postgres'
import { startPostgres } from './support/postgres.ts'
import { runToEnd } from './support/process.ts'

// Moving a market between stores: the demo market copied from a libSQL file into PostgreSQL and back.
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-copy-'))
const postgresServer = await startPostgres()
afterAll(async () => {
  await postgresServer.stop()
  rmSync(folder, { recursive: true, force: true })
})

/** Runs `agentmarket …words` from the checkout with only PATH and `env`. */
const agentmarket = (words: string[], env: Record<string, string>) =>
  runToEnd(['bun', 'packages/server/src/main.ts', ...words], {
    env: { PATH: process.env.PATH ?? '', ...env },
  })

/** The counts `agentmarket copy` printed: table -> [rows read, rows written]. */
function countsOf(stdout: string): Record<string, [number, number]> {
  const rows = stdout
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((words) => words.length === 3)
  return Object.fromEntries(rows.map(([table, from, to]) => [table, [Number(from), Number(to)]]))
}

/** What the public reads of a market show: the agents in each order, users, the feed, and one agent's tasks. */
async function shown(store: Store) {
  const now = new Date()
  const page = { limit: 100, offset: 0 }
  return {
    active: await store.listAgents({ ...page, sort: 'activity' }),
    trust: await store.listAgents({ ...page, sort: 'trust', now }),
    searched: await store.listAgents({ ...page, q: 'data', sort: 'price' }),
    users: await store.listUsers(page),
    feed: await store.listEvents({ limit: 200 }),
    offers: await store.listPaidOffers(null, 100),
  }
}

describe('agentmarket copy', () => {
  test('behavior: the demo market copied from libSQL into PostgreSQL and back: every count and every public read the same', async () => {
    const file = `file:${join(folder, 'demo.db')}`
    const demo = await agentmarket(['demo'], { DATABASE_URL: file })
    expect(demo.exitCode).toBe(0)

    // The target's password is never printed (the test server trusts local connections, so any password passes).
    const target = (await postgresServer.createDatabase()).replace('market@', 'market:hidden-pass@')
    const copied = await agentmarket(['copy', target], { DATABASE_URL: file })
    expect(copied.stderr).toBe('')
    expect(copied.exitCode).toBe(0)
    expect(copied.stdout).not.toContain('hidden-pass')
    const counts = countsOf(copied.stdout)
    for (const table of ['agents', 'skills', 'milestones', 'users', 'events', 'tasks'])
      expect(counts[table]?.[0], table).toBeGreaterThan(0)
    expect(Object.entries(counts).filter(([, [from, to]]) => from !== to)).toEqual([])

    const before = libsqlStore(await openDatabase(file))
    const after = await postgresStore(await openPostgres(target, { max: 2 }))
    expect(await shown(after)).toEqual(await shown(before))
    // A later write continues the copied ids (a feed client's Last-Event-ID stays valid).
    const newest = Number((await before.listEvents({ limit: 1 }))[0]?.id)
    await after.kvPut('after-copy', 1)
    const milestone = async (id: string) =>
      after.insertMilestone(
        {
          id,
          agentName:
            (await after.listAgents({ limit: 1, offset: 0, sort: 'activity' })).agents[0]?.name ?? '',
          date: '2026-11-25',
          title: 'after the copy',
          description: null,
          proof: null,
          trust: 'claimed',
          createdAt: new Date(),
        },
        [{ kind: 'milestone.recorded', agent: 'x', at: new Date(), summary: id, data: {} }],
      )
    await milestone('ms_after_copy')
    expect(Number((await after.listEvents({ limit: 1 }))[0]?.id)).toBe(newest + 1)
    // An insert rolled back still spends a sequence number: PostgreSQL's seq and the public id part from here on.
    const raw = postgres(target, { max: 1, onnotice: () => {} })
    await raw
      .begin(async (tx) => {
        await tx`insert into events (kind, agent, at, summary, data) values ('agent.updated', 'x', 1, 'undone', '{}')`
        throw new Error('undo')
      })
      .catch(() => {})
    await raw.end()
    await milestone('ms_after_rollback')
    expect(Number((await after.listEvents({ limit: 1 }))[0]?.id)).toBe(newest + 2)
    const onPostgres = await shown(after)
    await Promise.all([before.close(), after.close()])

    // Into a database that holds a market: refused, nothing written.
    const again = await agentmarket(['copy', target], { DATABASE_URL: file })
    expect(again.exitCode).toBe(1)
    expect(again.stderr).toBe(
      'agentmarket: cannot copy: the target already holds agents: copy into a new, empty database\n',
    )

    // And back, from PostgreSQL into a new libSQL file.
    const back = `file:${join(folder, 'back.db')}`
    const returned = await agentmarket(['copy', back], { DATABASE_URL: target })
    expect(returned.exitCode).toBe(0)
    const backCounts = countsOf(returned.stdout)
    expect(backCounts.agents).toEqual([counts.agents?.[0] ?? 0, counts.agents?.[0] ?? 0])
    expect(Object.entries(backCounts).filter(([, [from, to]]) => from !== to)).toEqual([])
    // Back on libSQL every public read is as PostgreSQL showed it, feed ids included.
    const backStore = libsqlStore(await openDatabase(back))
    expect(await shown(backStore)).toEqual(onPostgres)
    await backStore.close()
  })

  test('error: copy without a target, or with two, is a usage error (exit 2)', async () => {
    expect((await agentmarket(['copy'], {})).stderr).toStartWith(
      'agentmarket: copy needs the URL of the database to copy into',
    )
    const two = await agentmarket(['copy', 'file:/tmp/a.db', 'file:/tmp/b.db'], {})
    expect(two.exitCode).toBe(2)
  })
})
