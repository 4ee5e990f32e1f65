import type { Store, TaskChange, TaskRecord } from '@agentmarket/core'
import type { TaskRow } from '@agentmarket/core/rows'
import {
  entryToJson,
  idempotencyOf,
  nameKey,
  paymentColumns,
  pendingColumns,
  ratingColumns,
  refundedBaseUnits,
  toEventRow,
  toTaskRecord,
  toTaskRow,
} from '@agentmarket/core/rows'
import { fairPick, QUEUES, sqliteSql } from '@agentmarket/store-sql'
import { and, asc, desc, eq, gt, inArray, isNotNull, isNull, lte, or, type SQL, sql } from 'drizzle-orm'
import { budgetCaps, OverCap } from './budgetUsage.ts'
import type { Database } from './open.ts'
import { agents, events, tasks, trustBuyers } from './schema.ts'
import { named, shapedRead } from './shapedReads.ts'
import { trustStatements, trustTotalsSet } from './trustCredit.ts'
import { batchWriter, isUniqueViolation } from './writes.ts'

type TaskMethods = Pick<
  Store,
  | 'insertTask'
  | 'budgetUsage'
  | 'buyerDecisions'
  | 'getTask'
  | 'findTaskIdByTxHash'
  | 'findIdempotentAnswer'
  | 'markTaskPaid'
  | 'changeTask'
  | 'listDueJobs'
  | 'getTaskByEscrowJob'
  | 'rateTask'
  | 'listRatedTasks'
  | 'listTasks'
  | 'listDueRechecks'
  | 'claimDueRechecks'
  | 'setPendingCheck'
  | 'countPendingChecks'
  | 'expireTasks'
>

/** Which claim a unique violation broke, if it was one of a task's claims. */
function brokenClaim(error: unknown): 'tx_already_used' | 'escrow_task_id_used' | 'idempotency' | null {
  if (isUniqueViolation(error, 'tasks.tx_hash')) return 'tx_already_used'
  if (isUniqueViolation(error, 'tasks.escrow_task_id')) return 'escrow_task_id_used'
  if (isUniqueViolation(error, 'tasks.idempotency_key')) return 'idempotency'
  return null
}

// Work queue: paid first (first in, first out), then awaiting payment, then delivered, the latter newest first.
const WORK_QUEUE_ORDER = [
  sql`case ${tasks.status} when 'paid' then 0 when 'pending_payment' then 1 else 2 end`,
  sql`case when ${tasks.status} = 'paid' then ${tasks.paidAt} else -${tasks.createdAt} end`,
  sql`${tasks.id} desc`,
]
const HISTORY_ORDER = [sql`${tasks.createdAt} desc`, sql`${tasks.id} desc`]
const DELIVERED_ORDER = [sql`${tasks.completedAt} desc nulls last`, ...HISTORY_ORDER]
const ORDERS = { history: HISTORY_ORDER, delivered: DELIVERED_ORDER, work_queue: WORK_QUEUE_ORDER }

/** The wallet that decides a task's delivery (buyerWalletOf), lower case, and the outcomes it decided. */
const DECIDING_WALLET = sql`lower(coalesce(${tasks.paidFrom}, ${tasks.buyerWallet}))`
// Literal, as in the index's condition: the planner uses a partial index only when the query implies its condition.
const DECIDED = sql`${tasks.outcome} in ('accepted', 'rejected')`

/** The statuses a task can be rated in: finished, whichever way. */
const RATABLE_STATUSES = ['completed', 'rejected', 'expired'] as const
/** The columns a job change sets (Store.changeTask): the end of the review follows the delivery. */
function changedColumns(change: TaskChange) {
  const delivered = change.deliveredAt?.getTime()
  return {
    status: change.to,
    ...(change.resultUrl !== undefined && { resultUrl: change.resultUrl }),
    ...(delivered !== undefined && {
      deliveredAt: delivered,
      reviewUntil: sql`${delivered} + ${tasks.reviewSeconds} * 1000`,
    }),
    ...(change.completedAt && { completedAt: change.completedAt.getTime() }),
    ...(change.outcome && { outcome: change.outcome }),
    ...(change.entries?.some((entry) => entry.kind === 'refund') && {
      refundedBaseUnits: sql`${tasks.refundedBaseUnits} + ${Number(refundedBaseUnits(change.entries))}`,
    }),
    ...(change.entries?.length && {
      entries: sql`json_insert(${tasks.entries}, ${sql.join(
        change.entries.map((entry) => sql`'$[#]', json(${JSON.stringify(entryToJson(entry))})`),
        sql`, `,
      )})`,
    }),
  }
}

/** The task methods of the libSQL Store: every state change is a compare-and-set inside one write transaction. */
export function taskStore(database: Database): TaskMethods {
  const { db } = database
  const { writeBatch, insert, insertEvents } = batchWriter(database)

  const withAgentNames = async (rows: TaskRow[]): Promise<TaskRecord[]> => {
    if (rows.length === 0) return []
    const keys = [...new Set(rows.map((row) => row.agentKey))]
    const names = await db
      .select({ key: agents.nameKey, name: agents.name })
      .from(agents)
      .where(inArray(agents.nameKey, keys))
    const byKey = new Map(names.map(({ key, name }) => [key, name]))
    return rows.map((row) => toTaskRecord(row, byKey.get(row.agentKey) ?? row.agentKey))
  }

  /** One page of the tasks `where` selects, in `order`, with how many it selects. */
  const pageOf = async (where: SQL | undefined, order: SQL[], limit: number, offset: number) => {
    const [counted] = await db.select({ total: sql<number>`count(*)` }).from(tasks).where(where)
    const rows = await db
      .select()
      .from(tasks)
      .where(where)
      .orderBy(...order)
      .limit(limit)
      .offset(offset)
    return { tasks: await withAgentNames(rows), total: counted?.total ?? 0 }
  }

  // The buyer's polling read, built and prepared once: the task and its agent's name in one indexed read. The name is a
  // scalar subquery, not a join: SQLite runs this join at 21 µs a read against 3.5 µs (bench/CHANGES.md).
  const taskOfAgent = shapedRead<TaskRow & { agentName: string | null }>(
    database.connection,
    db
      .select({
        ...named(tasks),
        agentName: sql<
          string | null
        >`(select agents.name from agents where agents.name_key = tasks.agent_key)`.as('agentName'),
      })
      .from(tasks)
      .where(and(eq(tasks.id, sql.placeholder('id')), eq(tasks.agentKey, sql.placeholder('key')))),
  )
  // The task a transaction hash paid: read on every retry of a machine payment.
  const taskIdByTxHash = db
    .select({ id: tasks.id })
    .from(tasks)
    .where(eq(tasks.txHash, sql.placeholder('txHash')))
    .prepare()

  const findIdempotentAnswer: TaskMethods['findIdempotentAnswer'] = async (agentName, clientKey, key) => {
    const [row] = await db
      .select()
      .from(tasks)
      .where(
        and(
          eq(tasks.agentKey, nameKey(agentName)),
          eq(tasks.clientKey, clientKey),
          eq(tasks.idempotencyKey, key),
        ),
      )
    return row ? idempotencyOf(row) : null
  }

  /** One event insert per event, each landing only if the statement before it changed a row (so all or none). */
  const eventsIfChanged = (list: Parameters<typeof toEventRow>[0][]) =>
    list.map((event) => {
      const row = toEventRow(event)
      return sql`insert into ${events} (kind, agent, at, summary, data, task_id)
        select ${row.kind}, ${row.agent}, ${row.at}, ${row.summary}, ${row.data}, ${row.taskId} where changes() = 1`
    })

  const { usageOf, withinCap } = budgetCaps(database)

  return {
    async budgetUsage(buyerKey, from, to, now) {
      return usageOf(buyerKey, from, to, now)
    },

    async insertTask(task, newEvents, cap) {
      try {
        await writeBatch([
          ...(cap ? [withinCap(task, cap)] : []),
          insert(tasks, toTaskRow(task)),
          ...insertEvents(newEvents),
        ])
        return { outcome: 'inserted' }
      } catch (error) {
        if (error instanceof OverCap) return { outcome: 'budget_exceeded', usage: error.usage }
        const claim = brokenClaim(error)
        if (claim === null) throw error
        if (claim !== 'idempotency') return { outcome: claim }
        const answer =
          task.idempotency &&
          (await findIdempotentAnswer(task.agentName, task.clientKey, task.idempotency.key))
        if (!answer) throw error
        return { outcome: 'replay', answer }
      }
    },

    async buyerDecisions(wallets) {
      if (wallets.length === 0) return []
      const lowered = [...new Set(wallets.map((wallet) => wallet.toLowerCase()))]
      // The expression of the partial index tasks_by_deciding_wallet (schema.ts).
      return db
        .select({
          wallet: sql<string>`${DECIDING_WALLET}`,
          accepted: sql<number>`sum(${tasks.outcome} = 'accepted')`,
          rejected: sql<number>`sum(${tasks.outcome} = 'rejected')`,
        })
        .from(tasks)
        .where(and(inArray(DECIDING_WALLET, lowered), DECIDED))
        .groupBy(DECIDING_WALLET)
    },

    async getTask(agentName, id) {
      const row = taskOfAgent.get({ id, key: nameKey(agentName) })
      return row ? toTaskRecord(row, row.agentName ?? agentName) : null
    },

    async findTaskIdByTxHash(txHash) {
      return taskIdByTxHash.get({ txHash })?.id ?? null
    },

    findIdempotentAnswer,

    async markTaskPaid(id, payment, newEvents) {
      // The single UPDATE is the compare-and-set; its unique keys claim the hash and the escrow task id.
      try {
        const [update] = await writeBatch([
          db
            .update(tasks)
            .set({
              status: 'paid',
              ...paymentColumns(payment),
              ...pendingColumns(null),
              // A job in escrow keeps the contract's deadline (the chain decides it); others are due after their SLA.
              dueAt: payment.job ? null : sql`${payment.at.getTime()} + ${tasks.slaSeconds} * 1000`,
            })
            .where(
              and(
                eq(tasks.id, id),
                eq(tasks.status, 'pending_payment'),
                or(isNull(tasks.expiresAt), gt(tasks.expiresAt, payment.at.getTime())),
              ),
            ),
          ...eventsIfChanged(newEvents),
        ])
        return (update?.changes ?? 0) === 1 ? 'paid' : 'not_pending'
      } catch (error) {
        const claim = brokenClaim(error)
        if (claim === 'tx_already_used' || claim === 'escrow_task_id_used') return claim
        throw error
      }
    },

    async changeTask(change) {
      const { id, from, counts = {} } = change
      const at = change.at.getTime()
      const credit = trustStatements(id, from, at, counts)
      const one = (flag: true | undefined) => (flag ? 1 : 0)
      const results = await writeBatch([
        ...credit,
        db
          .update(tasks)
          .set(changedColumns(change))
          .where(and(eq(tasks.id, id), inArray(tasks.status, [...from]))),
        // Runs (and lets the events land) only when the compare-and-set above changed the task.
        sql`update ${agents} set completed_tasks = completed_tasks + ${one(counts.completed)},
              on_time_tasks = on_time_tasks + ${one(counts.onTime)}, late_tasks = late_tasks + ${one(counts.late)},
              refunded_tasks = refunded_tasks + ${one(counts.refund)},
              disputed_tasks = disputed_tasks + ${one(counts.dispute)},
              last_active_at = case when ${one(counts.completed)} = 1 then max(last_active_at, ${at})
                else last_active_at end
            where ${agents.nameKey} = (select ${tasks.agentKey} from ${tasks} where ${tasks.id} = ${id})
              and changes() = 1`,
        ...eventsIfChanged(change.events),
      ])
      return (results[credit.length]?.changes ?? 0) === 1
    },

    async rateTask(id, rating, newEvents, counted = true) {
      const wallet = rating.wallet.toLowerCase()
      // Each runs only when the one before it changed a row (changes() = 1): all of it, or nothing.
      const counting = [
        sql`insert into ${trustBuyers} (agent_key, wallet, paid_base_units, rating_count, rating_sum)
            select ${tasks.agentKey}, ${wallet}, 0, 1, ${rating.score} from ${tasks} where ${tasks.id} = ${id} and changes() = 1
            on conflict (agent_key, wallet) do update set rating_count = rating_count + 1,
              rating_sum = rating_sum + excluded.rating_sum`,
        sql`update ${agents} set rating_count = rating_count + 1, rating_sum = rating_sum + ${rating.score},
              ${trustTotalsSet()}
            where ${agents.nameKey} = (select ${tasks.agentKey} from ${tasks} where ${tasks.id} = ${id}) and changes() = 1`,
      ]
      const [rated] = await writeBatch([
        db
          .update(tasks)
          .set(ratingColumns(rating))
          .where(
            and(
              eq(tasks.id, id),
              isNull(tasks.rating),
              inArray(tasks.status, [...RATABLE_STATUSES]),
              isNotNull(tasks.paidAt),
            ),
          ),
        ...(counted ? counting : []),
        ...eventsIfChanged(newEvents),
      ])
      return (rated?.changes ?? 0) === 1
    },

    async listRatedTasks(agentName, limit, offset) {
      const where = and(eq(tasks.agentKey, nameKey(agentName)), isNotNull(tasks.ratedAt))
      return pageOf(where, [desc(tasks.ratedAt), desc(tasks.id)], limit, offset)
    },

    async getTaskByEscrowJob(ref) {
      const where =
        'jobId' in ref
          ? eq(tasks.jobId, ref.jobId)
          : and(eq(tasks.escrowTaskId, ref.key), isNotNull(tasks.escrowJob))
      const rows = await db.select().from(tasks).where(where).limit(1)
      const [task] = await withAgentNames(rows)
      return task ?? null
    },

    async listDueJobs(now, limit) {
      const time = now.getTime()
      const due = await db
        .select()
        .from(tasks)
        .where(and(eq(tasks.status, 'paid'), isNotNull(tasks.dueAt), lte(tasks.dueAt, time)))
        .orderBy(asc(tasks.dueAt))
        .limit(limit)
      const reviewed = await db
        .select()
        .from(tasks)
        .where(
          and(
            eq(tasks.status, 'delivered'),
            isNotNull(tasks.reviewUntil),
            lte(tasks.reviewUntil, time),
            isNull(tasks.escrowJob),
          ),
        )
        .orderBy(asc(tasks.reviewUntil))
        .limit(limit)
      const deadline = (row: TaskRow) => (row.status === 'paid' ? row.dueAt : row.reviewUntil) ?? 0
      return withAgentNames([...due, ...reviewed].sort((a, b) => deadline(a) - deadline(b)).slice(0, limit))
    },

    async listTasks(agentName, { statuses, order, limit, offset }) {
      const where = and(eq(tasks.agentKey, nameKey(agentName)), inArray(tasks.status, statuses))
      return pageOf(where, ORDERS[order], limit, offset)
    },

    async listDueRechecks(now, limit) {
      const rows = await db
        .select()
        .from(tasks)
        .where(
          and(
            isNotNull(tasks.nextRecheckAt),
            lte(tasks.nextRecheckAt, now.getTime()),
            eq(tasks.status, 'pending_payment'),
          ),
        )
        .orderBy(asc(tasks.nextRecheckAt))
        .limit(limit)
      return withAgentNames(rows)
    },

    async claimDueRechecks(now, leaseUntil, share) {
      // One UPDATE picks (the fair policy) and leases inside the write lock, so racing processes split the checks.
      const rows = await database.connection.commitTogether(() =>
        db
          .update(tasks)
          .set({ nextRecheckAt: leaseUntil.getTime(), recheckLeasedUntil: leaseUntil.getTime() })
          .where(
            and(
              sql`${tasks.id} in (${fairPick(sqliteSql, QUEUES.rechecks, now.getTime(), share)})`,
              eq(tasks.status, 'pending_payment'),
              lte(tasks.nextRecheckAt, now.getTime()),
            ),
          )
          .returning()
          .all(),
      )
      return withAgentNames(rows)
    },

    async setPendingCheck(id, check) {
      await db
        .update(tasks)
        .set(pendingColumns(check))
        .where(and(eq(tasks.id, id), eq(tasks.status, 'pending_payment')))
    },

    async countPendingChecks(clientKey) {
      const [counted] = await db
        .select({ total: sql<number>`count(*)` })
        .from(tasks)
        .where(
          and(
            eq(tasks.clientKey, clientKey),
            isNotNull(tasks.pendingTxHash),
            eq(tasks.status, 'pending_payment'),
          ),
        )
      return counted?.total ?? 0
    },

    async expireTasks(now, purgeBefore, limit) {
      const [expired, purged] = await writeBatch([
        sql`update ${tasks} set status = 'expired', pending_tx_hash = null, pending_signature = null,
              recheck_attempts = null, next_recheck_at = null
            where id in (select id from ${tasks} where status = 'pending_payment' and expires_at <= ${now.getTime()}
              limit ${limit})`,
        sql`delete from ${tasks} where id in (select id from ${tasks}
              where status = 'expired' and paid_at is null and expires_at <= ${purgeBefore.getTime()}
              limit ${limit})`,
      ])
      return { expired: expired?.changes ?? 0, purged: purged?.changes ?? 0 }
    },
  }
}
