import type { PendingCheck, Store, TaskPayment, TaskRecord, TaskStatus } from '@agentmarket/core'
import { nameKey } from '@agentmarket/core'
import { and, asc, eq, gt, inArray, isNotNull, isNull, lte, or, sql } from 'drizzle-orm'
import type { Address, Hex } from 'viem'
import type { Database } from './open.ts'
import { agents, events, tasks } from './schema.ts'
import { named, shapedRead } from './shapedReads.ts'
import { trustCreditStatements } from './trustCredit.ts'
import { batchWriter, dateOf, isUniqueViolation, ms, toEventRow } from './writes.ts'

type TaskRow = typeof tasks.$inferSelect

type TaskMethods = Pick<
  Store,
  | 'insertTask'
  | 'getTask'
  | 'findTaskIdByTxHash'
  | 'findIdempotentAnswer'
  | 'markTaskPaid'
  | 'completeTask'
  | 'listTasks'
  | 'listDueRechecks'
  | 'setPendingCheck'
  | 'countPendingChecks'
  | 'expireTasks'
>

// A paid amount is whatever the chain moved, possibly beyond 2^63, so it is kept as decimal text.
const paymentColumns = (payment: TaskPayment | null) => ({
  paymentMethod: payment?.method ?? null,
  txHash: payment?.txHash ?? null,
  escrowTaskId: payment?.escrowTaskId ?? null,
  paidAmountBaseUnits: payment ? payment.amountBaseUnits.toString() : null,
  paidFrom: payment?.from ?? null,
  paidAt: ms(payment?.at),
})

const pendingColumns = (check: PendingCheck | null) => ({
  pendingTxHash: check?.txHash ?? null,
  pendingSignature: check?.signature ?? null,
  recheckAttempts: check?.attempts ?? null,
  nextRecheckAt: ms(check?.nextAt),
})

/** The row of a task. */
export function toTaskRow(task: TaskRecord): typeof tasks.$inferInsert {
  return {
    id: task.id,
    agentKey: nameKey(task.agentName),
    skillName: task.skillName,
    skillSlug: task.skillSlug,
    sla: task.sla,
    status: task.status,
    // Prices are capped at 10^12 base units, far below 2^53.
    priceBaseUnits: Number(task.priceBaseUnits),
    payTo: task.payTo,
    params: task.params === null ? null : JSON.stringify(task.params),
    buyer: task.buyer,
    buyerEmail: task.buyerEmail,
    buyerWallet: task.buyerWallet,
    ...paymentColumns(task.payment),
    ...pendingColumns(task.pendingCheck),
    resultUrl: task.resultUrl,
    idempotencyKey: task.idempotency?.key ?? null,
    requestFingerprint: task.idempotency?.fingerprint ?? null,
    firstStatus: task.idempotency?.status ?? null,
    firstBody: task.idempotency ? JSON.stringify(task.idempotency.body) : null,
    clientKey: task.clientKey,
    expiresAt: ms(task.expiresAt),
    createdAt: task.createdAt.getTime(),
    completedAt: ms(task.completedAt),
  }
}

function paymentOf(row: TaskRow): TaskPayment | null {
  if (row.paymentMethod === null || row.paidAt === null) return null
  return {
    method: row.paymentMethod as TaskPayment['method'],
    txHash: row.txHash as Hex | null,
    escrowTaskId: row.escrowTaskId as Hex | null,
    amountBaseUnits: BigInt(row.paidAmountBaseUnits ?? 0),
    from: row.paidFrom as Address | null,
    at: new Date(row.paidAt),
  }
}

function idempotencyOf(row: TaskRow): TaskRecord['idempotency'] {
  if (row.idempotencyKey === null || row.firstBody === null) return null
  return {
    key: row.idempotencyKey,
    fingerprint: row.requestFingerprint ?? '',
    status: row.firstStatus ?? 201,
    body: JSON.parse(row.firstBody),
  }
}

function toTaskRecord(row: TaskRow, agentName: string): TaskRecord {
  const pending =
    row.pendingTxHash === null
      ? null
      : {
          txHash: row.pendingTxHash as Hex,
          signature: row.pendingSignature as Hex | null,
          attempts: row.recheckAttempts ?? 0,
          nextAt: new Date(row.nextRecheckAt ?? 0),
        }
  return {
    id: row.id,
    agentName,
    skillName: row.skillName,
    skillSlug: row.skillSlug,
    sla: row.sla,
    status: row.status as TaskStatus,
    priceBaseUnits: BigInt(row.priceBaseUnits),
    payTo: row.payTo as Address | null,
    params: row.params === null ? null : JSON.parse(row.params),
    buyer: row.buyer,
    buyerEmail: row.buyerEmail,
    buyerWallet: row.buyerWallet as Address | null,
    payment: paymentOf(row),
    pendingCheck: pending,
    resultUrl: row.resultUrl,
    idempotency: idempotencyOf(row),
    clientKey: row.clientKey ?? '',
    expiresAt: dateOf(row.expiresAt),
    createdAt: new Date(row.createdAt),
    completedAt: dateOf(row.completedAt),
  }
}

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
      return sql`insert into ${events} (kind, agent, at, summary, data)
        select ${row.kind}, ${row.agent}, ${row.at}, ${row.summary}, ${row.data} where changes() = 1`
    })

  return {
    async insertTask(task, newEvents) {
      try {
        await writeBatch([insert(tasks, toTaskRow(task)), ...insertEvents(newEvents)])
        return { outcome: 'inserted' }
      } catch (error) {
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
            .set({ status: 'paid', ...paymentColumns(payment), ...pendingColumns(null) })
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

    async completeTask(id, resultUrl, at, newEvents) {
      const credit = trustCreditStatements(id)
      const results = await writeBatch([
        ...credit,
        db
          .update(tasks)
          .set({ status: 'completed', resultUrl, completedAt: at.getTime() })
          .where(and(eq(tasks.id, id), eq(tasks.status, 'paid'))),
        sql`update ${agents} set completed_tasks = completed_tasks + 1, last_active_at = max(last_active_at, ${at.getTime()})
            where ${agents.nameKey} = (select ${tasks.agentKey} from ${tasks} where ${tasks.id} = ${id})
              and changes() = 1`,
        ...eventsIfChanged(newEvents),
      ])
      return (results[credit.length]?.changes ?? 0) === 1 ? 'completed' : 'not_paid'
    },

    async listTasks(agentName, { statuses, order, limit, offset }) {
      const where = and(eq(tasks.agentKey, nameKey(agentName)), inArray(tasks.status, statuses))
      const [counted] = await db.select({ total: sql<number>`count(*)` }).from(tasks).where(where)
      const rows = await db
        .select()
        .from(tasks)
        .where(where)
        .orderBy(...ORDERS[order])
        .limit(limit)
        .offset(offset)
      return { tasks: await withAgentNames(rows), total: counted?.total ?? 0 }
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
              where status = 'expired' and expires_at <= ${purgeBefore.getTime()} limit ${limit})`,
      ])
      return { expired: expired?.changes ?? 0, purged: purged?.changes ?? 0 }
    },
  }
}
