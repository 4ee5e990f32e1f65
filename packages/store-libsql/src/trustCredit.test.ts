import { describe, expect, test } from 'bun:test'
import { countedPaidTrust } from '@agentmarket/core/rows'
import { creditCountsAtSteps } from '@agentmarket/core/testing'
import { sql } from 'drizzle-orm'
import { openDatabase } from './open.ts'
import { PAID_POINTS } from './trustCredit.ts'

describe('PAID_POINTS', () => {
  test('behavior: the paid points a credited payment writes equal countedPaidTrust on both sides of every step, whoever paid', async () => {
    const { db, close } = await openDatabase(':memory:')
    const counts = creditCountsAtSteps()
    const written = counts.map((count) => {
      const row = db.get<{ points: number }>(sql`select ${PAID_POINTS} as points from (select
        ${Number(count.trustCreditBaseUnits)} as trust_credit_base_units,
        ${Number(count.establishedCreditBaseUnits)} as established_credit_base_units,
        ${count.establishedBuyers} as established_buyers)`)
      return row.points
    })
    expect(written).toEqual(counts.map(countedPaidTrust))
    await close()
  })
})
