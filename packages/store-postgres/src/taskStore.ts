import type { SpendCap, Store, TaskRecord, TaskStore } from '@agentmarket/core'
import { type JobCounts, nameKey, ratingColumns, toTaskRecord, toTaskRow } from '@agentmarket/core/rows'
import {
  postgresSql,
  QUEUES,
  taskReads,
  taskWrites,
  trustChangeStatements,
  trustSql,
} from '@agentmarket/store-sql'
import { and, eq, inArray, sql } from 'drizzle-orm'
import { eventInserts, inOneTrip, insertEvents, type Writer } from './agentStore.ts'
import { overCap, usageOf } from './budgetUsage.ts'
import { postgresExecutor } from './executor.ts'
import { claimFair } from './fairQueue.ts'
import type { PostgresDatabase } from './open.ts'
import { agents, tables, tasks } from './schema.ts'

/** The unique constraint a PostgreSQL error broke, if it is a uniqueness failure (SQLSTATE 23505). */
export function brokenConstraint(error: unknown): string | null {
  for (let current = error; current instanceof Error; current = current.cause) {
    const failure = current as Error & { code?: string; constraint_name?: string }
    if (failure.code === '23505') return failure.constraint_name ?? ''
  }
  return null
}

/** Which claim a unique violation broke, if it was one of a task's claims. */
function brokenClaim(error: unknown): 'tx_already_used' | 'escrow_task_id_used' | 'idempotency' | null {
  const constraint = brokenConstraint(error)
  if (constraint === 'tasks_tx_hash_unique') return 'tx_already_used'
  if (constraint === 'tasks_escrow_deposit') return 'escrow_task_id_used'
  if (constraint === 'tasks_idempotency_by_client') return 'idempotency'
  return null
}

/** The wallet that decides a task's delivery (buyerWalletOf), lower case, and the outcomes it decided. */
const _DECIDING_WALLET = sql`lower(coalesce(${tasks.paidFrom}, ${tasks.buyerWallet}))`
// Literal, as in the index's condition: the planner uses a partial index only when the query implies its condition.
const _DECIDED = sql`${tasks.outcome} in ('accepted', 'rejected')`

const trust = trustSql(postgresSql)
/** The agent's paid points from its credit counters (store-sql trust.ts), for `agents.paid_points`. */
export const PAID_POINTS = trust.paidPoints

/**
 * Moves a seller's trust rows for a job change (store-sql trustChange.ts: credit, judged job), then sums its counters
 * and paid points again. Runs in the change's transaction after its compare-and-set, on the locked seller row, so it
 * acts exactly once per change.
 */
async function changeTrust(tx: Writer, taskId: string, at: number, counts: JobCounts) {
  for (const statement of trustChangeStatements(postgresSql, tables, { taskId, at, counts }))
    await tx.execute(statement)
}

/** The task methods of the PostgreSQL Store: every state change is a compare-and-set on the row it locks. */
export function taskStore(database: PostgresDatabase): TaskStore {
  const { db } = database
  const x = postgresExecutor(database)
  const { withAgentNames, ...reads } = taskReads(x)
  const { changedColumns, inStatus, paidColumns, payable, ratable } = taskWrites(x)

  // The buyer's polling read, built once.
  const taskOfAgent = db
    .select({ task: tasks, name: agents.name })
    .from(tasks)
    .innerJoin(agents, eq(agents.nameKey, tasks.agentKey))
    .where(and(eq(tasks.id, sql.placeholder('id')), eq(tasks.agentKey, sql.placeholder('key'))))
    .prepare('task_of_agent')

  /**
   * A capped insert: one transaction that first takes the buyer's advisory lock (so one buyer's capped inserts on every
   * node run one at a time), then sums its day and inserts only within the cap.
   */
  const insertCapped = (task: TaskRecord, newEvents: Parameters<Store['insertTask']>[1], cap: SpendCap) =>
    db.transaction(async (tx) => {
      const usage = await overCap(tx, task, cap)
      if (usage) return { outcome: 'budget_exceeded' as const, usage }
      await tx.insert(tasks).values(toTaskRow(task))
      await insertEvents(tx, newEvents)
      return { outcome: 'inserted' as const }
    })

  return {
    async budgetUsage(buyerKey, from, to, now) {
      return usageOf(db, buyerKey, from, to, now)
    },

    async insertTask(task, newEvents, cap) {
      try {
        if (cap) return await insertCapped(task, newEvents, cap)
        await inOneTrip(database, [db.insert(tasks).values(toTaskRow(task)), ...eventInserts(db, newEvents)])
        return { outcome: 'inserted' }
      } catch (error) {
        const claim = brokenClaim(error)
        if (claim === null) throw error
        // A repeat under the same Idempotency-Key replays the first answer, whichever key PostgreSQL found taken first
        // (a repeat of a paid order also repeats its tx hash).
        const answer =
          task.idempotency &&
          (await reads.findIdempotentAnswer(task.agentName, task.clientKey, task.idempotency.key))
        if (answer) return { outcome: 'replay', answer }
        if (claim === 'idempotency') throw error
        return { outcome: claim }
      }
    },

    async getTask(agentName, id) {
      const [row] = await taskOfAgent.execute({ id, key: nameKey(agentName) })
      return row ? toTaskRecord(row.task, row.name) : null
    },

    async findTaskIdByTxHash(txHash) {
      const [row] = await db.select({ id: tasks.id }).from(tasks).where(eq(tasks.txHash, txHash))
      return row?.id ?? null
    },

    async markTaskPaid(id, payment, newEvents) {
      // The UPDATE is the compare-and-set (a racing payment waits for the row, then sees it paid); its unique keys
      // claim the hash and the escrow deposit.
      try {
        return await db.transaction(async (tx) => {
          const paid = await tx
            .update(tasks)
            .set(paidColumns(payment))
            .where(payable(id, payment))
            .returning({ id: tasks.id })
          if (paid.length === 0) return 'not_pending'
          await insertEvents(tx, newEvents)
          return 'paid'
        })
      } catch (error) {
        const claim = brokenClaim(error)
        if (claim === 'tx_already_used' || claim === 'escrow_task_id_used') return claim
        throw error
      }
    },

    async changeTask(change) {
      const { counts = {} } = change
      const time = change.at.getTime()
      const one = (flag: true | undefined) => (flag ? 1 : 0)
      return db.transaction(async (tx) => {
        const changed = await tx
          .update(tasks)
          .set(changedColumns(change))
          .where(inStatus(change.id, change.from))
          .returning({ agentKey: tasks.agentKey })
        const done = changed[0]
        if (!done) return false
        // The seller's row is locked before its credit is summed: completions of its other tasks wait, and each
        // statement after the lock reads what they committed (READ COMMITTED takes a new snapshot per statement).
        await tx
          .select({ key: agents.nameKey })
          .from(agents)
          .where(eq(agents.nameKey, done.agentKey))
          .for('update')
        await changeTrust(tx, change.id, change.at.getTime(), counts)
        await tx
          .update(agents)
          .set({
            completedTasks: sql`${agents.completedTasks} + ${one(counts.completed)}`,
            onTimeTasks: sql`${agents.onTimeTasks} + ${one(counts.onTime)}`,
            lateTasks: sql`${agents.lateTasks} + ${one(counts.late)}`,
            refundedTasks: sql`${agents.refundedTasks} + ${one(counts.refund)}`,
            disputedTasks: sql`${agents.disputedTasks} + ${one(counts.dispute)}`,
            ...(counts.completed && { lastActiveAt: sql`greatest(${agents.lastActiveAt}, ${time}::bigint)` }),
          })
          .where(eq(agents.nameKey, done.agentKey))
        await insertEvents(tx, change.events)
        return true
      })
    },

    async rateTask(id, rating, newEvents, counted = true) {
      const wallet = rating.wallet.toLowerCase()
      return db.transaction(async (tx) => {
        const rated = await tx
          .update(tasks)
          .set(ratingColumns(rating))
          .where(ratable(id))
          .returning({ agentKey: tasks.agentKey })
        const done = rated[0]
        if (!done) return false
        if (!counted) {
          await insertEvents(tx, newEvents)
          return true
        }
        // The agent's row first, as completions lock it: its sums below read every committed rating.
        await tx
          .select({ key: agents.nameKey })
          .from(agents)
          .where(eq(agents.nameKey, done.agentKey))
          .for('update')
        await tx.execute(sql`insert into trust_buyers (agent_key, wallet, paid_base_units, rating_count, rating_sum)
            values (${done.agentKey}, ${wallet}, 0, 1, ${rating.score})
            on conflict (agent_key, wallet) do update set rating_count = trust_buyers.rating_count + 1,
              rating_sum = trust_buyers.rating_sum + excluded.rating_sum`)
        await tx.execute(sql`update agents set rating_count = rating_count + 1, rating_sum = rating_sum + ${rating.score},
            ${trust.totalsSet}
          where name_key = ${done.agentKey}`)
        await insertEvents(tx, newEvents)
        return true
      })
    },

    ...reads,

    async claimDueRechecks(now, leaseUntil, share) {
      const ids = await claimFair(db, QUEUES.rechecks, now, leaseUntil, share)
      if (ids.length === 0) return []
      return withAgentNames(await db.select().from(tasks).where(inArray(tasks.id, ids)))
    },

    async expireTasks(now, purgeBefore, limit) {
      // Rows another node is expiring are skipped, not waited for: each node takes its own share.
      const expired = await db.execute(sql`update tasks set status = 'expired', pending_tx_hash = null,
          pending_signature = null, recheck_attempts = null, next_recheck_at = null
        where id in (select id from tasks where status = 'pending_payment' and expires_at <= ${now.getTime()}::bigint
          and pending_tx_hash is null limit ${limit} for update skip locked)
        returning 1`)
      const purged = await db.execute(sql`delete from tasks where id in (select id from tasks
          where status = 'expired' and paid_at is null and expires_at <= ${purgeBefore.getTime()}::bigint
          limit ${limit} for update skip locked)
        returning 1`)
      return { expired: expired.length, purged: purged.length }
    },
  }
}
