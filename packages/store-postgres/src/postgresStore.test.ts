import { afterAll, describe, expect, test } from 'bun:test'
import { StoreUnavailableError } from '@agentmarket/core'
import { type CreditCounts, countedPaidTrust, trustTotals } from '@agentmarket/core/rows'
import {
  creditCountsAtSteps,
  kvBucketMove,
  sampleAgent,
  sampleEvent,
  storeSuite,
} from '@agentmarket/core/testing'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { startMigratedPostgres } from '../../../tests/support/postgres.ts'
import migrations from './migrations.json' with { type: 'json' }
import { openPostgres, type PostgresDatabase } from './open.ts'
import { postgresStore } from './postgresStore.ts'
import { PAID_POINTS } from './taskStore.ts'

const server = await startMigratedPostgres()
afterAll(() => server.stop())

/** A transaction left open on its own connection after `work`, until `commit` (a long job, an idle session). */
async function openTransaction(url: string, work: (tx: postgres.TransactionSql) => Promise<unknown>) {
  const connection = postgres(url, { max: 1, onnotice: () => {} })
  let finish = () => {}
  let opened = () => {}
  const ready = new Promise<void>((resolve) => {
    opened = resolve
  })
  const done = connection.begin(async (tx) => {
    await work(tx)
    opened()
    await new Promise<void>((resolve) => {
      finish = resolve
    })
  })
  await ready
  return {
    commit: async () => {
      finish()
      await done
      await connection.end()
    },
  }
}

storeSuite({ describe, test }, 'postgresStore', async () =>
  postgresStore(await openPostgres(await server.freshUrl(), { max: 4 })),
)

describe('postgresStore across nodes', () => {
  /** Two stores (two nodes' pools) on one fresh database. */
  const twoNodes = async () => {
    const url = await server.freshUrl()
    return [
      await postgresStore(await openPostgres(url, { max: 4 })),
      await postgresStore(await openPostgres(url, { max: 4 })),
    ]
  }

  test('behavior: an event committed after a later-numbered one still reaches a reader paging by id', async () => {
    const url = await server.freshUrl()
    const store = await postgresStore(await openPostgres(url, { max: 4 }))
    const raw = postgres(url, { max: 2, onnotice: () => {} })
    // The slow transaction draws the lower seq but commits last.
    const slow = await openTransaction(
      url,
      (tx) =>
        tx`insert into events (kind, agent, at, summary, data) values ('agent.updated', 'a', 1, 'slow', '{}')`,
    )
    await raw`insert into events (kind, agent, at, summary, data) values ('agent.updated', 'a', 1, 'fast', '{}')`
    // Any write that public reads or the feed may show runs the sequencer (a kv write does not).
    await store.insertAgent(sampleAgent({ name: 'nudge-1', apiKeyHash: 'k-1', pairingCodeHash: 'p-1' }), [])
    // The committed event is shown at once; the open transaction's is not seen, so it cannot take a place before it.
    const first = await store.listEvents({ after: '0', limit: 10 })
    expect(first.map((shownEvent) => [shownEvent.id, shownEvent.summary])).toEqual([['1', 'fast']])
    await slow.commit()
    await store.insertAgent(sampleAgent({ name: 'nudge-2', apiKeyHash: 'k-2', pairingCodeHash: 'p-2' }), [])
    // A reader who paged past the fast event still reads the slow one: it is positioned after, when it committed.
    const next = await store.listEvents({ after: first[0]?.id ?? '0', limit: 10 })
    expect(next.map((shownEvent) => [shownEvent.id, shownEvent.summary])).toEqual([['2', 'slow']])
    await raw.end()
    await store.close()
  })

  test('fault: a transaction left open in another database of the cluster, or on another table of this one, does not hold back the feed', async () => {
    const url = await server.freshUrl()
    const store = await postgresStore(await openPostgres(url, { max: 4 }))
    // Both hold a transaction id (xid): PostgreSQL's oldest running xid is the cluster's, whatever the database.
    const elsewhere = await openTransaction(await server.createDatabase(), (tx) => tx`select txid_current()`)
    const here = await openTransaction(url, (tx) => tx`select txid_current()`)
    await store.insertAgent(sampleAgent({ name: 'seen-1', apiKeyHash: 'k-1', pairingCodeHash: 'p-1' }), [
      sampleEvent({ agent: 'seen-1', summary: 'registered while others run' }),
    ])
    const shown = await store.listEvents({ limit: 10 })
    expect(shown.map((shownEvent) => shownEvent.summary)).toEqual(['registered while others run'])
    await elsewhere.commit()
    await here.commit()
    await store.close()
  })

  test('behavior: another node sees a write in its change version and its feed as soon as the notices arrive', async () => {
    const [writer, reader] = await twoNodes()
    if (!writer || !reader) throw new Error('two stores')
    const before = await reader.changeVersion?.()
    let announced = 0
    const stop = reader.watchEvents?.(() => {
      announced++
    })
    await Bun.sleep(50)
    await writer.insertAgent(sampleAgent({ name: 'elsewhere' }), [sampleEvent()])
    const waited = performance.now()
    while (
      (announced === 0 || (await reader.changeVersion?.()) === before) &&
      performance.now() - waited < 30_000
    )
      await Bun.sleep(5)
    expect(announced).toBeGreaterThan(0)
    expect(await reader.changeVersion?.()).not.toBe(before)
    expect((await reader.listEvents({ limit: 1 })).length).toBe(1)
    stop?.()
    await Promise.all([writer.close(), reader.close()])
  })
})

describe('paid points', () => {
  /** Agents `a0`, `a1`, … holding `counts` as their credit counters, their paid points left at 0; their paid points, in order. */
  async function agentsHolding(database: PostgresDatabase, counts: CreditCounts[]) {
    const rows = counts.map((count, index) => ({
      name_key: `a${index}`,
      name: `a${index}`,
      platform: 'other',
      status: 'free',
      api_key_hash: `k${index}`,
      pairing_code_hash: `p${index}`,
      last_active_at: 0,
      created_at: 0,
      updated_at: 0,
      revision: 1,
      trust_credit_base_units: count.trustCreditBaseUnits.toString(),
      paying_buyers: count.establishedBuyers + 1,
      established_credit_base_units: count.establishedCreditBaseUnits.toString(),
      established_buyers: count.establishedBuyers,
    }))
    await database.sql`insert into agents ${database.sql(rows)}`
    return async () =>
      (await database.sql`select paid_points from agents order by substr(name_key, 2)::int`).map((row) =>
        Number(row.paid_points),
      )
  }

  test('behavior: the paid points a credited payment writes equal countedPaidTrust on both sides of every step, whoever paid', async () => {
    const database = await openPostgres(await server.freshUrl(), { max: 1 })
    const counts = creditCountsAtSteps()
    const pointsNow = await agentsHolding(database, counts)
    await database.db.execute(sql`update agents set paid_points = ${PAID_POINTS}`)
    expect(await pointsNow()).toEqual(counts.map(countedPaidTrust))
    await database.close()
  })

  test("behavior: migration 0011's data move writes each agent's paid points from its credit counters, as countedPaidTrust counts them", async () => {
    const database = await openPostgres(await server.freshUrl(), { max: 1 })
    const counts = creditCountsAtSteps()
    const pointsNow = await agentsHolding(database, counts)
    const dataMove = migrations[11]?.sql[1] ?? ''
    expect(dataMove).toContain('paid_points')
    await database.sql.unsafe(dataMove)
    const points = await pointsNow()
    expect(points).toEqual(counts.map(countedPaidTrust))
    expect(points.filter((point) => point > 0).length).toBeGreaterThan(counts.length / 2)
    await database.close()
  })

  test("behavior: migration 0012's data move counts each judged job on its payer's row and sums the on-time votes as trustTotals does", async () => {
    const database = await openPostgres(await server.freshUrl(), { max: 1 })
    const seller = '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed'
    const [fresh, other, steady] = [`0x${'a'.repeat(40)}`, `0x${'b'.repeat(40)}`, `0x${'c'.repeat(40)}`]
    await database.sql.unsafe(`insert into agents (name_key, name, platform, status, api_key_hash, pairing_code_hash,
      last_active_at, created_at, updated_at, revision, wallet_address, on_time_tasks, late_tasks)
      values ('s', 'S', 'other', 'free', 'k', 'p', 0, 0, 0, 1, '${seller}', 4, 3)`)
    // The steady wallet was credited as an established buyer before.
    await database.sql.unsafe(`insert into trust_buyers (agent_key, wallet, paid_base_units, established, first_paid_at)
      values ('s', '${steady}', 5000000, 1, 1000)`)
    const jobs: [string, string, boolean, string, string][] = [
      ['t1', fresh.toUpperCase().replace('0X', '0x'), true, 'delivered', 'transfer'],
      ['t2', fresh, false, 'late', 'transfer'],
      ['t3', other, false, 'late', 'transfer'],
      ['t4', steady, true, 'accepted', 'transfer'],
      ['t5', steady, false, 'late', 'transfer'],
      // Paid by the wallet it paid, or by MPP: never judged.
      ['t6', seller, false, 'late', 'transfer'],
      ['t7', other, true, 'delivered', 'mpp'],
    ]
    for (const [id, from, delivered, outcome, method] of jobs)
      await database.sql`insert into tasks (id, agent_key, skill_name, skill_slug, sla, status, price_base_units,
          pay_to, payment_method, paid_from, paid_amount_base_units, paid_at, created_at, delivered_at, outcome)
        values (${id}, 's', 'R', 'r', '1h', ${delivered ? 'completed' : 'expired'}, '1', ${seller}, ${method},
          ${from}, '1000000', 2000, 1000, ${delivered ? 3000 : null}, ${outcome})`
    const moves = migrations[12]?.sql.slice(4) ?? []
    expect(moves).toHaveLength(2)
    for (const step of moves) await database.sql.unsafe(step)
    const rows = await database.sql`select wallet, on_time_jobs, late_jobs, established from trust_buyers
      order by wallet`
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
        onTimeJobs: Number(row.on_time_jobs),
        lateJobs: Number(row.late_jobs),
      })),
    )
    const [agent] = await database.sql`select reliability_votes, reliability_weight from agents`
    expect([agent?.reliability_votes, agent?.reliability_weight]).toEqual([833, 2000])
    expect([agent?.reliability_votes, agent?.reliability_weight]).toEqual([
      totals.reliabilityVotes,
      totals.reliabilityWeight,
    ])
    await database.close()
  })
})

describe('kv expiry', () => {
  test("behavior: migration 0013's data move gives the rows the old hour buckets listed their expiry and drops the buckets, so a sweep still forgets them", async () => {
    const database = await openPostgres(await server.freshUrl(), { max: 1 })
    const store = await postgresStore(database)
    const move = kvBucketMove()
    for (const [key, value] of move.rows)
      await database.sql`insert into kv (key, value) values (${key}, ${JSON.stringify(value)})`
    const moves = migrations[13]?.sql.slice(2) ?? []
    expect(moves).toHaveLength(4)
    for (const step of moves) await database.sql.unsafe(step)
    const kept = await database.sql`select key, expires_at from kv order by key`
    expect(kept.map((row) => [row.key, row.expires_at === null ? null : Number(row.expires_at)])).toEqual(
      move.expiries,
    )
    await move.sweptBy(store)
    await store.close()
  })
})

describe('lock_timeout', () => {
  test("attack: a write queued behind another transaction's row lock past the pool's lock_timeout does nothing and answers database_unavailable (nothing changed), not late work for a caller already answered", async () => {
    const url = await server.freshUrl()
    const store = await postgresStore(await openPostgres(url, { max: 2, timeouts: { lockMs: 200 } }), {
      deadlines: { requestMs: 10_000, searchMs: 10_000, backgroundMs: 10_000 },
    })
    const holder = postgres(url, { max: 1, onnotice: () => {} })
    try {
      await store.insertAgent(sampleAgent({ name: 'hot-row', bio: 'before' }), [])
      let release = () => {}
      const held = new Promise<void>((resolve) => (release = resolve))
      const locked = new Promise<void>((resolve) => {
        void holder.begin(async (tx) => {
          await tx`select 1 from agents where name_key = 'hot-row' for update`
          resolve()
          await held
        })
      })
      await locked
      const refused = await store.updateAgent('hot-row', { bio: 'late' }, new Date(), []).then(
        () => null,
        (error: unknown) => error,
      )
      expect(refused).toBeInstanceOf(StoreUnavailableError)
      expect((refused as StoreUnavailableError).outcome).toBe('unchanged')
      release()
      expect((await store.getAgent('hot-row'))?.bio).toBe('before')
    } finally {
      await holder.end()
      await store.close()
    }
  })
})
