import { describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AgentFilters } from '@agentmarket/core'
import { countedPaidTrust, trustTotals } from '@agentmarket/core/rows'
import { creditCountsAtSteps, kvBucketMove } from '@agentmarket/core/testing'
import { readMigrationFolder } from '../scripts/embed-migrations.ts'
import { connectionOver } from './connection.ts'
import { openNative } from './drivers.ts'
import { libsqlStore } from './libsqlStore.ts'
import { applyMigrations, migrate } from './migrate.ts'
import embedded from './migrations.json' with { type: 'json' }
import { openDatabase } from './open.ts'

/** A connection to `:memory:` or a `file:` URL. */
const connect = async (url = ':memory:') =>
  connectionOver(await openNative({ path: url.replace(/^file:/, ''), local: true }))

/** A connection to `:memory:` or `url` with the first `count` embedded migrations applied, as an older release left it. */
async function migratedUpTo(count: number, url = ':memory:') {
  const client = await connect(url)
  client.exec(
    'CREATE TABLE "__drizzle_migrations" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)',
  )
  for (const migration of embedded.slice(0, count)) {
    for (const statement of migration.sql) if (statement.trim()) client.exec(statement)
    client.run('INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (?, ?)', [
      migration.hash,
      migration.folderMillis,
    ])
  }
  return client
}

describe('migrate', () => {
  test('behavior: the embedded migrations are the drizzle folder as drizzle reads it (run bun run db:generate)', () => {
    expect(embedded).toEqual(JSON.parse(JSON.stringify(readMigrationFolder())))
  })

  test('behavior: a new database gets every migration once; a second run applies none', async () => {
    const client = await connect()
    expect(await migrate(client)).toBe(embedded.length)
    expect(await migrate(client)).toBe(0)
    const tables = client.all("select name from sqlite_master where type = 'table' and name = 'tasks'")
    expect(tables).toHaveLength(1)
    client.close()
  })

  test('behavior: upgrading to 0008 gives waiting tasks a 24 h expiry and credits buyers of delivered tasks', async () => {
    const client = await migratedUpTo(8)
    const seller = '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed'
    client.run(`insert into agents (name_key, name, platform, status, api_key_hash, pairing_code_hash,
      last_active_at, created_at, updated_at, revision, wallet_address) values ('s', 'S', 'other', 'free', 'k', 'p', 0, 0, 0, 1, '${seller}')`)
    const task = (id: string, status: string, from: string | null, amount: string | null) =>
      client.run(
        `insert into tasks (id, agent_key, skill_name, skill_slug, sla, status, price_base_units, pay_to,
          payment_method, paid_from, paid_amount_base_units, paid_at, created_at)
          values (?, 's', 'R', 'r', '1h', ?, 1, ?, ?, ?, ?, ?, 1000)`,
        [id, status, seller, from ? 'transfer' : null, from, amount, from ? 2000 : null],
      )
    task('waiting', 'pending_payment', null, null)
    task('a1', 'completed', '0xAAAA000000000000000000000000000000000001', '4000000')
    task('a2', 'completed', '0xaaaa000000000000000000000000000000000001', '9000000')
    task('b', 'completed', '0xbbbb000000000000000000000000000000000002', '1000000')
    task('self', 'completed', seller, '5000000')
    task('mint', 'completed', '0x0000000000000000000000000000000000000000', '5000000')
    expect(await migrate(client)).toBe(embedded.length - 8)
    const [waiting] = client.all("select expires_at from tasks where id = 'waiting'")
    expect(Number(waiting?.expires_at)).toBe(1000 + 86_400_000)
    const [agent] = client.all(
      "select trust_credit_base_units, paying_buyers from agents where name_key = 's'",
    )
    expect(Number(agent?.trust_credit_base_units)).toBe(10_000_000 + 1_000_000)
    expect(Number(agent?.paying_buyers)).toBe(2)
    // 0009: a code issued before expiry existed works for 7 days from the upgrade.
    const [code] = client.all("select pairing_code_expires_at from agents where name_key = 's'")
    const expires = Number(code?.pairing_code_expires_at)
    expect(Math.abs(expires - (Date.now() + 7 * 86_400_000))).toBeLessThan(60_000)
    client.close()
  })

  test('behavior: a run reports the numbers of the migrations it applied, in order, of those it knows', async () => {
    expect(await applyMigrations(await connect())).toEqual({
      applied: embedded.map((_, number) => number),
      known: embedded.length,
    })
    // A database an older release made: its first migrations applied, as that release's migrate did.
    const older = await migratedUpTo(embedded.length - 2)
    const n = embedded.length
    expect(await applyMigrations(older)).toEqual({ applied: [n - 2, n - 1], known: n })
    expect(await applyMigrations(older)).toEqual({ applied: [], known: n })
    older.close()
  })

  test('behavior: upgrading to 0011 indexes existing skills for search and derives their price and free columns', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'agentmarket-migrate-'))
    const url = `file:${join(folder, 'market.db')}`
    const client = await migratedUpTo(11, url)
    const agent = (key: string, bio: string | null) =>
      client.run(
        `insert into agents (name_key, name, bio, platform, status, api_key_hash, pairing_code_hash,
          last_active_at, created_at, updated_at, revision) values (?, ?, ?, 'other', 'free', ?, ?, 0, 0, 0, 1)`,
        [key, key, bio, `k-${key}`, `p-${key}`],
      )
    const skill = (key: string, position: number, name: string, type: string, price: number | null) =>
      client.run(
        `insert into skills (agent_key, position, slug, name, name_key, description, type, price_base_units, currency)
          values (?, ?, ?, ?, ?, ?, ?, ?, 'USDC')`,
        [key, position, `s${position}`, name, name.toLowerCase(), `about ${name}`, type, price],
      )
    agent('gdpr', 'privacy')
    skill('gdpr', 0, 'GDPR Data Map', 'purchasable', 5_000_000)
    skill('gdpr', 1, 'Audit', 'purchasable', 700_000)
    skill('gdpr', 2, 'Intro call', 'free', null)
    agent('plain', 'makes maps')
    client.close()

    const store = libsqlStore(await openDatabase(url))
    try {
      const found = async (q: string) =>
        (await store.listAgents({ q, limit: 10, offset: 0 })).agents.map((row) => row.name)
      expect(await found('Data Map')).toEqual(['gdpr'])
      expect(await found('about intro')).toEqual(['gdpr'])
      expect(await found('maps')).toEqual(['plain'])
      const names = async (query: AgentFilters & { sort?: 'price' }) =>
        (await store.listAgents({ limit: 10, offset: 0, ...query })).agents.map((row) => row.name)
      expect(await names({ maxPriceBaseUnits: 700_000n })).toEqual(['gdpr'])
      expect(await names({ maxPriceBaseUnits: 699_999n })).toEqual([])
      expect(await names({ sells: 'free' })).toEqual(['gdpr'])
      expect(await names({ sort: 'price' })).toEqual(['gdpr', 'plain'])
      // The rebuilt index follows later writes through its triggers.
      await store.updateAgent('gdpr', { skills: [] }, new Date(1), [])
      expect(await found('Data Map')).toEqual([])
    } finally {
      await store.close()
      rmSync(folder, { recursive: true, force: true })
    }
  })
  test('behavior: upgrading to 0018 indexes the listed agents lower-cased: a search finds them exactly, withdrawn ones not', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'agentmarket-migrate-'))
    const url = `file:${join(folder, 'market.db')}`
    const client = await migratedUpTo(18, url)
    const agent = (key: string, bio: string, listing = 'active') =>
      client.run(
        `insert into agents (name_key, name, bio, platform, status, api_key_hash, pairing_code_hash,
          last_active_at, created_at, updated_at, revision, listing, skill_text)
          values (?, ?, ?, 'other', 'free', ?, ?, 0, 0, 0, 1, ?, 'Map Tiles\u001fmap-tiles\u001f')`,
        [key, key, bio, `k-${key}`, `p-${key}`, listing],
      )
    agent('ecole', 'École de Cartes')
    agent('gone', 'École de Cartes too', 'deleted')
    client.close()

    const store = libsqlStore(await openDatabase(url))
    try {
      const found = async (q: string) => {
        const page = await store.listAgents({ q, limit: 10, offset: 0 })
        expect(page.total).toBe(page.agents.length)
        return page.agents.map((row) => row.name)
      }
      expect(await found('DE CARTES')).toEqual(['ecole'])
      expect(await found('école')).toEqual([])
      expect(await found('MAP TILES')).toEqual(['ecole'])
      // The new triggers follow later writes: a bio change, a withdrawal.
      await store.updateAgent('ecole', { bio: 'Relief maps' }, new Date(1), [])
      expect(await found('cartes')).toEqual([])
      expect(await found('RELIEF')).toEqual(['ecole'])
      await store.updateAgent('ecole', { listing: 'deleted' }, new Date(2), [])
      expect(await found('relief')).toEqual([])
    } finally {
      await store.close()
      rmSync(folder, { recursive: true, force: true })
    }
  })

  test("behavior: upgrading to 0025 writes each agent's paid points from its credit counters, as countedPaidTrust counts them", async () => {
    const client = await migratedUpTo(25)
    const counts = creditCountsAtSteps()
    for (const [index, count] of counts.entries())
      client.run(
        `insert into agents (name_key, name, platform, status, api_key_hash, pairing_code_hash, last_active_at,
          created_at, updated_at, revision, trust_credit_base_units, paying_buyers, established_credit_base_units,
          established_buyers) values (?, ?, 'other', 'free', ?, ?, 0, 0, 0, 1, ?, ?, ?, ?)`,
        [
          `a${index}`,
          `a${index}`,
          `k${index}`,
          `p${index}`,
          Number(count.trustCreditBaseUnits),
          count.establishedBuyers + 1,
          Number(count.establishedCreditBaseUnits),
          count.establishedBuyers,
        ],
      )
    expect(await migrate(client)).toBe(embedded.length - 25)
    const points = client
      .all('select paid_points from agents order by rowid')
      .map((row) => Number(row.paid_points))
    expect(points).toEqual(counts.map(countedPaidTrust))
    expect(points.filter((point) => point > 0).length).toBeGreaterThan(counts.length / 2)
    client.close()
  })

  test("behavior: upgrading to 0026 counts each judged job on its payer's row and sums the on-time votes as trustTotals does", async () => {
    const client = await migratedUpTo(26)
    const seller = '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed'
    const [fresh, other, steady] = [`0x${'a'.repeat(40)}`, `0x${'b'.repeat(40)}`, `0x${'c'.repeat(40)}`]
    client.run(`insert into agents (name_key, name, platform, status, api_key_hash, pairing_code_hash,
      last_active_at, created_at, updated_at, revision, wallet_address, on_time_tasks, late_tasks)
      values ('s', 'S', 'other', 'free', 'k', 'p', 0, 0, 0, 1, '${seller}', 4, 3)`)
    // The steady wallet was credited as an established buyer before.
    client.run(`insert into trust_buyers (agent_key, wallet, paid_base_units, established, first_paid_at)
      values ('s', '${steady}', 5000000, 1, 1000)`)
    const task = (
      id: string,
      from: string,
      delivered: boolean,
      outcome: string | null,
      method = 'transfer',
    ) =>
      client.run(
        `insert into tasks (id, agent_key, skill_name, skill_slug, sla, status, price_base_units, pay_to,
          payment_method, paid_from, paid_amount_base_units, paid_at, created_at, delivered_at, outcome)
          values (?, 's', 'R', 'r', '1h', ?, 1, ?, ?, ?, '1000000', 2000, 1000, ?, ?)`,
        [id, delivered ? 'completed' : 'expired', seller, method, from, delivered ? 3000 : null, outcome],
      )
    task('t1', fresh.toUpperCase().replace('0X', '0x'), true, 'delivered')
    task('t2', fresh, false, 'late')
    task('t3', other, false, 'late')
    task('t4', steady, true, 'accepted')
    task('t5', steady, false, 'late')
    // Paid by the wallet it paid, or by MPP: never judged.
    task('t6', seller, false, 'late')
    task('t7', other, true, 'delivered', 'mpp')
    expect(await migrate(client)).toBe(embedded.length - 26)
    const rows = client.all(
      'select wallet, on_time_jobs, late_jobs, established from trust_buyers order by wallet',
    ) as { wallet: string; on_time_jobs: number; late_jobs: number; established: number }[]
    expect(rows.map((row) => [row.wallet, row.on_time_jobs, row.late_jobs, row.established])).toEqual([
      [fresh, 1, 1, 0],
      [other, 0, 1, 0],
      [steady, 1, 1, 1],
    ])
    const totals = trustTotals(
      rows.map((row) => ({
        paidBaseUnits: 0n,
        established: row.established === 1,
        ratingCount: 0,
        ratingSum: 0,
        onTimeJobs: row.on_time_jobs,
        lateJobs: row.late_jobs,
      })),
    )
    const [agent] = client.all('select reliability_votes, reliability_weight from agents') as {
      reliability_votes: number
      reliability_weight: number
    }[]
    // The steady buyer's vote (1 of 2 on time) and the newcomers' together (1 of 3).
    expect(agent).toEqual({ reliability_votes: 500 + 333, reliability_weight: 2000 })
    expect([agent?.reliability_votes, agent?.reliability_weight]).toEqual([
      totals.reliabilityVotes,
      totals.reliabilityWeight,
    ])
    client.close()
  })

  test('behavior: upgrading to 0028 gives the rows the old hour buckets listed their expiry and drops the buckets, so a sweep still forgets them', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'agentmarket-migrate-'))
    const url = `file:${join(folder, 'market.db')}`
    const client = await migratedUpTo(28, url)
    const move = kvBucketMove()
    for (const [key, value] of move.rows)
      client.run('insert into kv (key, value) values (?, ?)', [key, JSON.stringify(value)])
    expect(await migrate(client)).toBe(embedded.length - 28)
    expect(client.all('select key, expires_at from kv order by key')).toEqual(
      move.expiries.map(([key, expires_at]) => ({ key, expires_at })),
    )
    client.close()
    const store = libsqlStore(await openDatabase(url))
    try {
      await move.sweptBy(store)
    } finally {
      await store.close()
      rmSync(folder, { recursive: true, force: true })
    }
  })
})
