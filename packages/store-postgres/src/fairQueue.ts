import type { FairShare } from '@agentmarket/core'
import { type FairQueueTable, fairPick, postgresSql } from '@agentmarket/store-sql'
import { sql } from 'drizzle-orm'
import type { PostgresJsDatabase } from 'drizzle-orm/postgres-js'

/**
 * Claims from `queue` what the fair policy picks at `now` (store-sql fairQueue.ts, written once for both stores),
 * leasing each until `leaseUntil`; answers the ids. Claims take turns (a transaction-scoped advisory lock per queue):
 * the quotas count what every node has in flight, so two nodes picking at once could together pass them. A claim is
 * one short statement.
 */
export async function claimFair(
  db: PostgresJsDatabase,
  queue: FairQueueTable,
  now: Date,
  leaseUntil: Date,
  share: FairShare,
): Promise<string[]> {
  const raw = sql.raw
  const lease = postgresSql.long(leaseUntil.getTime())
  const rows = await db.transaction(async (tx) => {
    // A background pass, bounded by its own deadline: it waits its turn however short the pool's lock_timeout is.
    await tx.execute(sql`set local lock_timeout = 0`)
    await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`${queue.table}:claim`}, 0))`)
    return tx.execute<{
      id: string
    }>(sql`update ${raw(queue.table)} set ${raw(queue.onClaim ? `${queue.onClaim},` : '')}
        ${raw(queue.dueAt)} = ${lease}, ${raw(queue.leasedUntil)} = ${lease}
      where id in (${fairPick(postgresSql, queue, now.getTime(), share)}) and ${raw(queue.pending)}
        and ${raw(queue.dueAt)} <= ${postgresSql.long(now.getTime())}
      returning id`)
  })
  return rows.map((row) => row.id)
}
