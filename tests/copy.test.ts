import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Store } from '@agentmarket/core'
import { libsqlStore, openDatabase } from '@agentmarket/store-libsql'
import { openPostgres, postgresStore } from '@agentmarket/store-postgres'
import postgres from 'postgres'
import { isDerivedTable, MARKET_TABLES } from '../packages/server/src/copy/tables.ts'
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

/** The tables `agentmarket copy` reported: table -> its line's words after the name (rows read, rows written, digest, verdict). */
function reportOf(stdout: string): Record<string, string[]> {
  const rows = stdout
    .split('\n')
    .filter((line) => line.startsWith('  '))
    .map((line) => line.trim().split(/\s+/))
  return Object.fromEntries(rows.map(([table = '', ...rest]) => [table, rest]))
}

/** The counts `agentmarket copy` printed: table -> [rows read, rows written]. */
function countsOf(stdout: string): Record<string, [number, number]> {
  const report = Object.entries(reportOf(stdout))
  return Object.fromEntries(report.map(([table, [from, to]]) => [table, [Number(from), Number(to)]]))
}

/** The tables a migrated libSQL file holds (not SQLite's own, drizzle's bookkeeping, or what triggers derive). */
async function libsqlTablesOf(url: string): Promise<string[]> {
  const database = await openDatabase(url)
  const rows = database.connection.values(
    "select name from sqlite_master where type = 'table' and name not like 'sqlite_%' and name not like '__drizzle%'",
  )
  database.close()
  return rows
    .map(([name]) => String(name))
    .filter((name) => !isDerivedTable(name))
    .sort()
}

/** The tables a migrated PostgreSQL database holds in its schema (not drizzle's bookkeeping). */
async function postgresTablesOf(url: string): Promise<string[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  const rows = await sql<{ name: string }[]>`select table_name as name from information_schema.tables
    where table_schema = current_schema() and table_type = 'BASE TABLE' and table_name not like '__drizzle%'`
  await sql.end()
  return rows
    .map((row) => row.name)
    .filter((name) => !isDerivedTable(name))
    .sort()
}

/** Adds a webhook endpoint of the demo's first agent and two deliveries to it, one delivered and one failed. */
async function addWebhooks(store: Store) {
  const agent = (await store.listAgents({ limit: 1, offset: 0, sort: 'activity' })).agents[0]
  if (!agent) throw new Error('the demo market has no agent')
  const at = new Date('2026-11-25T10:00:00Z')
  const webhook = {
    id: 'wh_copied',
    agentKey: agent.name.toLowerCase(),
    taskId: null,
    url: 'https://receiver.example/hook',
    events: ['task.paid' as const],
    createdAt: at,
    afterEventId: '0',
    droppedDeliveries: 2,
    addedBy: '',
  }
  expect(await store.insertWebhook(webhook, 10)).toBe(true)
  const delivery = (id: string, eventId: string) => ({
    id,
    webhookId: webhook.id,
    tenant: webhook.agentKey,
    eventId,
    url: webhook.url,
    type: 'task.paid' as const,
    payload: JSON.stringify({ type: 'task.paid', id }),
    createdAt: at,
    attempts: 0,
    nextAttemptAt: at,
    leasedUntil: null,
    deliveredAt: null,
    failedAt: null,
    lastStatus: null,
    lastError: null,
    lastLatencyMs: null,
  })
  await store.enqueueDeliveries([delivery('msg_one', '1'), delivery('msg_two', '2')], 100)
  await store.settleDelivery('msg_one', { outcome: 'delivered', at, status: 204, latencyMs: 12 })
  await store.settleDelivery('msg_two', {
    outcome: 'failed',
    at,
    status: 500,
    error: 'receiver answered 500',
    latencyMs: 30,
    nextAttemptAt: null,
  })
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
    const source = libsqlStore(await openDatabase(file))
    await addWebhooks(source)
    await source.close()

    // The target's password is never printed (the test server trusts local connections, so any password passes).
    const target = (await postgresServer.createDatabase()).replace('market@', 'market:hidden-pass@')
    // The server's deadlines (here 1 ms) never apply to a copy: it runs under DATABASE_COPY_TIMEOUT_MS alone.
    const serverDeadlines = ['REQUEST', 'SEARCH', 'BACKGROUND'].map((kind) => [
      `DATABASE_${kind}_TIMEOUT_MS`,
      '1',
    ])
    const copied = await agentmarket(['copy', target], {
      DATABASE_URL: file,
      ...Object.fromEntries(serverDeadlines),
    })
    expect(copied.stderr).toBe('')
    expect(copied.exitCode).toBe(0)
    expect(copied.stdout).not.toContain('hidden-pass')
    const counts = countsOf(copied.stdout)
    for (const table of ['agents', 'skills', 'milestones', 'users', 'events', 'tasks', 'webhooks'])
      expect(counts[table]?.[0], table).toBeGreaterThan(0)
    expect(counts.webhook_deliveries).toEqual([2, 2])
    expect(Object.entries(counts).filter(([, [from, to]]) => from !== to)).toEqual([])
    // Every table either store's schema holds is in the report, each one's content the same on both sides.
    const report = reportOf(copied.stdout)
    expect(Object.keys(report).sort()).toEqual(await libsqlTablesOf(file))
    expect(Object.keys(report).sort()).toEqual(await postgresTablesOf(target))
    expect(Object.values(report).map((words) => words[3])).toEqual(Object.values(report).map(() => 'same'))
    expect(copied.stdout).toContain("rows and content digests (SHA-256 of each table's rows) match")

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
    const backReport = reportOf(returned.stdout)
    expect(Object.keys(backReport).sort()).toEqual(await libsqlTablesOf(back))
    expect(Object.values(backReport).map((words) => words[3])).toEqual(
      Object.values(backReport).map(() => 'same'),
    )
    // Tables the writes on PostgreSQL above left alone came back as they left: the digest the first copy printed.
    for (const table of ['users', 'tasks', 'webhooks', 'webhook_deliveries'])
      expect(backReport[table]?.[2], table).toBe(report[table]?.[2] ?? '')
    // The endpoint and its deliveries, as the store reads them, came back whole.
    const webhooksBack = libsqlStore(await openDatabase(back))
    expect(await webhooksBack.listDeliveries('wh_copied', 10)).toEqual(
      await (async () => {
        const original = libsqlStore(await openDatabase(file))
        const deliveries = await original.listDeliveries('wh_copied', 10)
        await original.close()
        return deliveries
      })(),
    )
    await webhooksBack.close()
    // Back on libSQL every public read is as PostgreSQL showed it, feed ids included.
    const backStore = libsqlStore(await openDatabase(back))
    expect(await shown(backStore)).toEqual(onPostgres)
    await backStore.close()
  })

  test('error: a copy into a PostgreSQL that stops answering (its processes stopped) exits 1 within DATABASE_COPY_TIMEOUT_MS with one line naming the database and the step', async () => {
    const target = await postgresServer.createDatabase()
    await (await openPostgres(target, { max: 1 })).close()
    const table = MARKET_TABLES[0] as string
    // A lock on the target's first table holds the copy at its first count, so the server is frozen mid-copy.
    const holder = postgres(target, { max: 1, onnotice: () => {} })
    const admin = postgres(postgresServer.adminUrl, { max: 1, onnotice: () => {} })
    let release = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    let locked = () => {}
    const lockTaken = new Promise<void>((resolve) => {
      locked = resolve
    })
    const holding = holder.begin(async (tx) => {
      await tx.unsafe(`lock table ${table} in access exclusive mode`)
      locked()
      await held
    })
    await lockTaken
    const copy = Bun.spawn(['bun', 'packages/server/src/main.ts', 'copy', target], {
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: `file:${join(folder, 'frozen-source.db')}`,
        DATABASE_COPY_TIMEOUT_MS: '2000',
      },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    try {
      const database = new URL(target).pathname.slice(1)
      for (;;) {
        if (copy.exitCode !== null) throw new Error(`the copy exited ${copy.exitCode} before it waited`)
        const [waiting] = await admin<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
          where datname = ${database} and wait_event_type = 'Lock'`
        if ((waiting?.n ?? 0) > 0) break
        await Bun.sleep(10)
      }
      postgresServer.freeze()
      const [stderr, exitCode] = await Promise.all([new Response(copy.stderr).text(), copy.exited])
      expect(exitCode).toBe(1)
      expect(stderr.trim()).toBe(
        `agentmarket: cannot copy: the target database ${target} did not finish counting the rows of ${table} within 2000 ms (DATABASE_COPY_TIMEOUT_MS): the copy stopped there; copy again into a new, empty database once it answers`,
      )
    } finally {
      postgresServer.thaw()
      copy.kill()
      release()
      await holding
      await Promise.all([holder.end(), admin.end()])
    }
  })

  test('error: copy without a target, or with two, is a usage error (exit 2)', async () => {
    expect((await agentmarket(['copy'], {})).stderr).toStartWith(
      'agentmarket: copy needs the URL of the database to copy into',
    )
    const two = await agentmarket(['copy', 'file:/tmp/a.db', 'file:/tmp/b.db'], {})
    expect(two.exitCode).toBe(2)
  })
})
