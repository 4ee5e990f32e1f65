import type { TaskChange, TaskPayment, TaskRecord, TaskStore } from '@agentmarket/core'
import {
  entryToJson,
  idempotencyOf,
  nameKey,
  paymentColumns,
  pendingColumns,
  refundedBaseUnits,
  type TaskRow,
  toTaskRecord,
} from '@agentmarket/core/rows'
import { and, asc, desc, eq, gt, inArray, isNotNull, isNull, lte, or, type SQL, sql } from 'drizzle-orm'
import type { Executor, SetOf } from './executor.ts'

/** The statuses a task can be rated in: finished, whichever way. */
const RATABLE_STATUSES = ['completed', 'rejected', 'expired'] as const

/**
 * The columns and conditions of the task writes, the same in both stores; each store runs them its way (store-libsql
 * in a group commit, store-postgres in a transaction).
 */
export function taskWrites({ tables, sql: dialect }: Executor) {
  const { tasks } = tables
  return {
    /** The columns a job change sets (Store.changeTask): the end of the review follows the delivery. */
    changedColumns(change: TaskChange): SetOf<'tasks'> {
      const delivered = change.deliveredAt?.getTime()
      return {
        status: change.to,
        ...(change.resultUrl !== undefined && { resultUrl: change.resultUrl }),
        ...(delivered !== undefined && {
          deliveredAt: delivered,
          reviewUntil: sql`${dialect.long(delivered)} + ${dialect.widened(tasks.reviewSeconds)} * 1000`,
        }),
        ...(change.completedAt && { completedAt: change.completedAt.getTime() }),
        ...(change.outcome && { outcome: change.outcome }),
        ...(change.entries?.some((entry) => entry.kind === 'refund') && {
          refundedBaseUnits: sql`${tasks.refundedBaseUnits} + ${dialect.long(Number(refundedBaseUnits(change.entries)))}`,
        }),
        ...(change.entries?.length && {
          entries: dialect.appendJson(
            tasks.entries,
            change.entries.map((entry) => JSON.stringify(entryToJson(entry))),
          ),
        }),
      }
    },
    /** The task `id` while it is in one of `from`: a job change's compare-and-set. */
    inStatus: (id: string, from: readonly string[]) =>
      and(eq(tasks.id, id), inArray(tasks.status, [...from])),
    /** The columns a payment sets: paid, its proof, no pending check, and the deadline of its SLA. */
    paidColumns: (payment: TaskPayment): SetOf<'tasks'> => ({
      status: 'paid',
      ...paymentColumns(payment),
      ...pendingColumns(null),
      // A job in escrow keeps the contract's deadline (the chain decides it); others are due after their SLA.
      dueAt: payment.job
        ? null
        : sql`${dialect.long(payment.at.getTime())} + ${dialect.widened(tasks.slaSeconds)} * 1000`,
    }),
    /**
     * The task `id` while it awaits payment and its order has not expired when `payment` is recorded, or the payment is
     * the one whose hash the task keeps under re-check (sent in time; its task waits for it): a payment's compare-and-set.
     */
    payable: (id: string, payment: Pick<TaskPayment, 'at' | 'txHash'>) =>
      and(
        eq(tasks.id, id),
        eq(tasks.status, 'pending_payment'),
        or(
          isNull(tasks.expiresAt),
          gt(tasks.expiresAt, payment.at.getTime()),
          payment.txHash === null ? undefined : eq(tasks.pendingTxHash, payment.txHash),
        ),
      ),
    /** The task `id` while it is finished, paid and not yet rated: a rating's compare-and-set. */
    ratable: (id: string) =>
      and(
        eq(tasks.id, id),
        isNull(tasks.rating),
        inArray(tasks.status, [...RATABLE_STATUSES]),
        isNotNull(tasks.paidAt),
      ),
  }
}

/** The task reads, and the pending-check writes, both stores run alike. */
type SharedTaskMethods = Pick<
  TaskStore,
  | 'buyerDecisions'
  | 'findIdempotentAnswer'
  | 'listRatedTasks'
  | 'getTaskByEscrowJob'
  | 'listDueJobs'
  | 'listTasks'
  | 'listDueRechecks'
  | 'setPendingCheck'
  | 'countPendingChecks'
>

/**
 * The task methods both stores run alike, over a store's executor, and `withAgentNames` for the store's own reads.
 * @example const { withAgentNames, ...reads } = taskReads(sqliteExecutor(database))
 */
export function taskReads(x: Executor): SharedTaskMethods & {
  withAgentNames(rows: TaskRow[]): Promise<TaskRecord[]>
} {
  const { tasks, agents } = x.tables

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

  const withAgentNames = async (rows: TaskRow[]): Promise<TaskRecord[]> => {
    if (rows.length === 0) return []
    const keys = [...new Set(rows.map((row) => row.agentKey))]
    const names = await x.select(
      { key: agents.nameKey, name: agents.name },
      { from: 'agents', where: inArray(agents.nameKey, keys) },
    )
    const byKey = new Map(names.map(({ key, name }) => [key, name]))
    return rows.map((row) => toTaskRecord(row, byKey.get(row.agentKey) ?? row.agentKey))
  }

  /** One page of the tasks `where` selects, in `orderBy`, with how many it selects. */
  const pageOf = async (where: SQL | undefined, orderBy: SQL[], limit: number, offset: number) => {
    const total = await x.count({ from: 'tasks', where })
    const rows = await x.rows({ from: 'tasks', where, orderBy, limit, offset })
    return { tasks: await withAgentNames(rows), total }
  }

  return {
    withAgentNames,

    async findIdempotentAnswer(agentName, clientKey, key) {
      const [row] = await x.rows({
        from: 'tasks',
        where: and(
          eq(tasks.agentKey, nameKey(agentName)),
          eq(tasks.clientKey, clientKey),
          eq(tasks.idempotencyKey, key),
        ),
      })
      return row ? idempotencyOf(row) : null
    },

    async buyerDecisions(wallets) {
      if (wallets.length === 0) return []
      const lowered = [...new Set(wallets.map((wallet) => wallet.toLowerCase()))]
      // The expression of the partial index tasks_by_deciding_wallet (schema.ts).
      return x.select(
        {
          wallet: sql<string>`${DECIDING_WALLET}`,
          accepted: sql<number>`${x.sql.countWhere(sql`${tasks.outcome} = 'accepted'`)}`,
          rejected: sql<number>`${x.sql.countWhere(sql`${tasks.outcome} = 'rejected'`)}`,
        },
        { from: 'tasks', where: and(inArray(DECIDING_WALLET, lowered), DECIDED), groupBy: [DECIDING_WALLET] },
      )
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
      const [task] = await withAgentNames(await x.rows({ from: 'tasks', where, limit: 1 }))
      return task ?? null
    },

    async listDueJobs(now, limit) {
      const time = now.getTime()
      const due = await x.rows({
        from: 'tasks',
        where: and(eq(tasks.status, 'paid'), isNotNull(tasks.dueAt), lte(tasks.dueAt, time)),
        orderBy: [asc(tasks.dueAt)],
        limit,
      })
      const reviewed = await x.rows({
        from: 'tasks',
        where: and(
          eq(tasks.status, 'delivered'),
          isNotNull(tasks.reviewUntil),
          lte(tasks.reviewUntil, time),
          isNull(tasks.escrowJob),
        ),
        orderBy: [asc(tasks.reviewUntil)],
        limit,
      })
      const deadline = (row: TaskRow) => (row.status === 'paid' ? row.dueAt : row.reviewUntil) ?? 0
      return withAgentNames([...due, ...reviewed].sort((a, b) => deadline(a) - deadline(b)).slice(0, limit))
    },

    async listTasks(agentName, { statuses, order, limit, offset }) {
      const where = and(eq(tasks.agentKey, nameKey(agentName)), inArray(tasks.status, statuses))
      return pageOf(where, ORDERS[order], limit, offset)
    },

    async listDueRechecks(now, limit) {
      const rows = await x.rows({
        from: 'tasks',
        where: and(
          isNotNull(tasks.nextRecheckAt),
          lte(tasks.nextRecheckAt, now.getTime()),
          eq(tasks.status, 'pending_payment'),
        ),
        orderBy: [asc(tasks.nextRecheckAt)],
        limit,
      })
      return withAgentNames(rows)
    },

    async setPendingCheck(id, check) {
      await x.change(
        'tasks',
        pendingColumns(check),
        and(eq(tasks.id, id), eq(tasks.status, 'pending_payment')),
      )
    },

    async countPendingChecks(clientKey) {
      return x.count({
        from: 'tasks',
        where: and(
          eq(tasks.clientKey, clientKey),
          isNotNull(tasks.pendingTxHash),
          eq(tasks.status, 'pending_payment'),
        ),
      })
    },
  }
}
