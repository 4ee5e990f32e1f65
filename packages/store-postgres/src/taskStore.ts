import type { SpendCap, Store, TaskChange, TaskRecord } from '@agentmarket/core'
import {
  entryToJson,
  idempotencyOf,
  type JobCounts,
  nameKey,
  PAID_TRUST_STEPS,
  POINTS_PER_BUYER,
  paymentColumns,
  pendingColumns,
  ratingColumns,
  refundedBaseUnits,
  STANDING_AGE_MS,
  STANDING_ELSEWHERE_BASE_UNITS,
  type TaskRow,
  TRUST_CREDIT_PER_BUYER,
  TRUST_CREDITED_METHODS,
  toTaskRecord,
  toTaskRow,
} from '@agentmarket/core/rows'
import { QUEUES } from '@agentmarket/store-sql'
import { and, asc, desc, eq, gt, inArray, isNotNull, isNull, lte, or, type SQL, sql } from 'drizzle-orm'
import { zeroAddress } from 'viem'
import { eventInserts, inOneTrip, insertEvents, type Writer } from './agentStore.ts'
import { overCap, usageOf } from './budgetUsage.ts'
import { claimFair } from './fairQueue.ts'
import type { PostgresDatabase } from './open.ts'
import { agents, tasks } from './schema.ts'

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
const DECIDING_WALLET = sql`lower(coalesce(${tasks.paidFrom}, ${tasks.buyerWallet}))`
// Literal, as in the index's condition: the planner uses a partial index only when the query implies its condition.
const DECIDED = sql`${tasks.outcome} in ('accepted', 'rejected')`

// Work queue: paid first (first in, first out), then awaiting payment, then delivered, the latter newest first.
const WORK_QUEUE_ORDER = [
  sql`case ${tasks.status} when 'paid' then 0 when 'pending_payment' then 1 else 2 end`,
  sql`case when ${tasks.status} = 'paid' then ${tasks.paidAt} else -${tasks.createdAt} end`,
  sql`${tasks.id} desc`,
]
const HISTORY_ORDER = [sql`${tasks.createdAt} desc`, sql`${tasks.id} desc`]
const DELIVERED_ORDER = [sql`${tasks.completedAt} desc nulls last`, ...HISTORY_ORDER]
const ORDERS = { history: HISTORY_ORDER, delivered: DELIVERED_ORDER, work_queue: WORK_QUEUE_ORDER }

/** A row's vote weight in thousandths (Trust.ts voteWeight), of `trust_buyers` aliased `b`. */
const WEIGHT = sql.raw(`least(1000, b.paid_base_units / ${(TRUST_CREDIT_PER_BUYER / 1000n).toString()})`)
/** A row's vote in thousandths (Trust.ts ratingVote), of `trust_buyers` aliased `b`. */
const VOTE = sql.raw('((2000 * (b.rating_sum - b.rating_count) + 4 * b.rating_count) / (8 * b.rating_count))')
const OF_AGENT = sql.raw('from trust_buyers b where b.agent_key = agents.name_key')
/** The SET list that sums an agent's trust counters again from its rows (Trust.ts trustTotals), as store-libsql's. */
const TRUST_TOTALS = sql`trust_credit_base_units = (select coalesce(sum(b.paid_base_units), 0) ${OF_AGENT}),
    paying_buyers = (select count(*) ${OF_AGENT} and b.paid_base_units > 0),
    established_credit_base_units = (select coalesce(sum(b.paid_base_units), 0) ${OF_AGENT} and b.established = 1),
    established_buyers = (select count(*) ${OF_AGENT} and b.established = 1 and b.paid_base_units > 0),
    rated_buyers = (select count(*) ${OF_AGENT} and b.rating_count > 0),
    rating_votes = (select coalesce(sum(${VOTE} * ${WEIGHT} / 1000), 0) ${OF_AGENT} and b.rating_count > 0),
    rating_weight = (select coalesce(sum(${WEIGHT}), 0) ${OF_AGENT} and b.rating_count > 0),
    ${reliabilitySet(OF_AGENT)}`

/**
 * The SET items of the on-time votes (Trust.ts trustTotals), as store-libsql's reliabilitySet: one per established row
 * with judged jobs, and one for the other rows' jobs together. `of` selects the agent's rows (`b`).
 */
export function reliabilitySet(of: SQL): SQL {
  const judged = sql.raw('b.on_time_jobs + b.late_jobs > 0')
  return sql`reliability_votes = (select coalesce(sum(1000 * b.on_time_jobs / (b.on_time_jobs + b.late_jobs)), 0)
        ${of} and b.established = 1 and ${judged})
        + (select coalesce(1000 * sum(b.on_time_jobs) / sum(b.on_time_jobs + b.late_jobs), 0)
        ${of} and b.established = 0 and ${judged}),
      reliability_weight = 1000 * ((select count(*) ${of} and b.established = 1 and ${judged})
        + (select (count(*) > 0)::int ${of} and b.established = 0 and ${judged}))`
}

/** The credit the paid curve reads and the buyers it counts (Trust.ts countedPaidTrust), as store-libsql's. */
const COUNTED_CREDIT = `(established_credit_base_units + least(${TRUST_CREDIT_PER_BUYER.toString()}, trust_credit_base_units - established_credit_base_units))`
const COUNTED_BUYERS = '(established_buyers + (trust_credit_base_units > established_credit_base_units)::int)'
/**
 * The agent's paid points from its credit counters (Trust.ts countedPaidTrust), for `agents.paid_points`, as
 * store-libsql's PAID_POINTS: the curve's steps at or below the counted credit, at most 10 per counted buyer. It reads
 * the counters as the row holds them, so it runs in a statement after the one that sums them.
 */
export const PAID_POINTS = sql.raw(
  `least(${POINTS_PER_BUYER} * ${COUNTED_BUYERS}, ${PAID_TRUST_STEPS.map((step) => `(${COUNTED_CREDIT} >= ${step.toString()})::int`).join(' + ')})`,
)

/**
 * 1 when the wallet `lower(t.paid_from)` is established toward agent `a` at `at` (Trust.ts isEstablished), as
 * store-libsql's trustCredit.ts: its credit at agents unconnected to `a` (another agent, not the same owner, not the
 * same wallet) reaches STANDING_ELSEWHERE_BASE_UNITS and its first credit anywhere is STANDING_AGE_MS old.
 */
function establishedAt(at: number) {
  const unconnected = sql`s.name_key <> a.name_key
    and (a.owner_key is null or s.owner_key is null or s.owner_key <> a.owner_key)
    and (coalesce(a.wallet_address, '') = '' or s.wallet_address is null
      or lower(s.wallet_address) <> lower(a.wallet_address))`
  const elsewhere = sql`(select coalesce(sum(h.paid_base_units), 0) from trust_buyers h
    join agents s on s.name_key = h.agent_key where h.wallet = lower(t.paid_from) and ${unconnected})`
  const first = sql`(select min(h.first_paid_at) from trust_buyers h where h.wallet = lower(t.paid_from))`
  return sql`(case when ${elsewhere} >= ${STANDING_ELSEWHERE_BASE_UNITS.toString()}::bigint
    and ${first} <= ${at - STANDING_AGE_MS}::bigint then 1 else 0 end)`
}

/**
 * Credits a delivered task's buyer wallet to its seller's trust at `at`, as Store.changeTask says (creditedBuyer,
 * cappedCredit and isEstablished in SQL; store-libsql's trustCredit.ts is the same in SQLite). Runs in the
 * completion's transaction, after its compare-and-set, so it acts exactly once per completed task.
 */
async function creditTrust(tx: Writer, taskId: string, at: number) {
  const cap = TRUST_CREDIT_PER_BUYER.toString()
  const methods = sql.join(
    TRUST_CREDITED_METHODS.map((method) => sql`${method}`),
    sql`, `,
  )
  // A paid amount beyond 2^63 is compared as a numeric, which the cap then cuts.
  await tx.execute(sql`insert into trust_buyers (agent_key, wallet, paid_base_units, established, first_paid_at)
    select t.agent_key, lower(t.paid_from), least(${cap}::numeric, t.paid_amount_base_units::numeric)::bigint,
      ${establishedAt(at)}, ${at}::bigint
    from tasks t join agents a on a.name_key = t.agent_key left join users u on u.name_key = a.owner_key
    where t.id = ${taskId} and t.payment_method in (${methods}) and t.paid_from is not null
      and t.paid_amount_base_units::numeric > 0
      and lower(t.paid_from) not in (lower(coalesce(t.pay_to, '')), lower(coalesce(a.wallet_address, '')),
        lower(coalesce(u.wallet_address, '')), ${zeroAddress})
    on conflict (agent_key, wallet)
      do update set paid_base_units = least(${cap}::bigint, trust_buyers.paid_base_units + excluded.paid_base_units),
        established = greatest(trust_buyers.established, excluded.established),
        first_paid_at = coalesce(trust_buyers.first_paid_at, excluded.first_paid_at)`)
}

/** Counts a judged job on the row of the wallet that paid it, with its standing at `at` (Store.changeTask). */
async function judgeJob(tx: Writer, taskId: string, at: number, counts: JobCounts) {
  const onTime = counts.onTime ? 1 : 0
  const late = counts.late ? 1 : 0
  await tx.execute(sql`insert into trust_buyers (agent_key, wallet, paid_base_units, established, on_time_jobs, late_jobs)
    select t.agent_key, lower(t.paid_from), 0, ${establishedAt(at)}, ${onTime}::int, ${late}::int
    from tasks t join agents a on a.name_key = t.agent_key
    where t.id = ${taskId} and t.paid_from is not null
    on conflict (agent_key, wallet)
      do update set on_time_jobs = trust_buyers.on_time_jobs + excluded.on_time_jobs,
        late_jobs = trust_buyers.late_jobs + excluded.late_jobs,
        established = greatest(trust_buyers.established, excluded.established)`)
}

/** Moves a seller's trust rows for a job change (credit, judged job), then sums its counters and paid points again. */
async function changeTrust(tx: Writer, taskId: string, at: number, counts: JobCounts) {
  if (!counts.completed && !counts.onTime && !counts.late) return
  if (counts.completed) await creditTrust(tx, taskId, at)
  if (counts.onTime || counts.late) await judgeJob(tx, taskId, at, counts)
  const seller = sql`name_key = (select agent_key from tasks where id = ${taskId})`
  await tx.execute(sql`update agents set ${TRUST_TOTALS} where ${seller}`)
  await tx.execute(sql`update agents set paid_points = ${PAID_POINTS} where ${seller}`)
}

/** The columns a job change sets (Store.changeTask): the end of the review follows the delivery. */
function changedColumns(change: TaskChange) {
  const delivered = change.deliveredAt?.getTime()
  return {
    status: change.to,
    ...(change.resultUrl !== undefined && { resultUrl: change.resultUrl }),
    ...(delivered !== undefined && {
      deliveredAt: delivered,
      reviewUntil: sql`${delivered}::bigint + ${tasks.reviewSeconds}::bigint * 1000`,
    }),
    ...(change.completedAt && { completedAt: change.completedAt.getTime() }),
    ...(change.outcome && { outcome: change.outcome }),
    ...(change.entries?.some((entry) => entry.kind === 'refund') && {
      refundedBaseUnits: sql`${tasks.refundedBaseUnits} + ${Number(refundedBaseUnits(change.entries))}::bigint`,
    }),
    ...(change.entries?.length && {
      entries: sql`(${tasks.entries}::jsonb || jsonb_build_array(${sql.join(
        change.entries.map((entry) => sql`${JSON.stringify(entryToJson(entry))}::jsonb`),
        sql`, `,
      )}))::text`,
    }),
  }
}

/** The task methods of the PostgreSQL Store: every state change is a compare-and-set on the row it locks. */
export function taskStore(database: PostgresDatabase): TaskMethods {
  const { db } = database
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
    const [counted] = await db.select({ total: sql<number>`count(*)::int` }).from(tasks).where(where)
    const rows = await db
      .select()
      .from(tasks)
      .where(where)
      .orderBy(...order)
      .limit(limit)
      .offset(offset)
    return { tasks: await withAgentNames(rows), total: counted?.total ?? 0 }
  }

  // The buyer's polling read, built once.
  const taskOfAgent = db
    .select({ task: tasks, name: agents.name })
    .from(tasks)
    .innerJoin(agents, eq(agents.nameKey, tasks.agentKey))
    .where(and(eq(tasks.id, sql.placeholder('id')), eq(tasks.agentKey, sql.placeholder('key'))))
    .prepare('task_of_agent')

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

    async buyerDecisions(wallets) {
      if (wallets.length === 0) return []
      const lowered = [...new Set(wallets.map((wallet) => wallet.toLowerCase()))]
      // The expression of the partial index tasks_by_deciding_wallet (schema.ts).
      return db
        .select({
          wallet: sql<string>`${DECIDING_WALLET}`,
          accepted: sql<number>`(count(*) filter (where ${tasks.outcome} = 'accepted'))::int`,
          rejected: sql<number>`(count(*) filter (where ${tasks.outcome} = 'rejected'))::int`,
        })
        .from(tasks)
        .where(and(inArray(DECIDING_WALLET, lowered), DECIDED))
        .groupBy(DECIDING_WALLET)
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
          (await findIdempotentAnswer(task.agentName, task.clientKey, task.idempotency.key))
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

    findIdempotentAnswer,

    async markTaskPaid(id, payment, newEvents) {
      // The UPDATE is the compare-and-set (a racing payment waits for the row, then sees it paid); its unique keys
      // claim the hash and the escrow deposit.
      try {
        return await db.transaction(async (tx) => {
          const paid = await tx
            .update(tasks)
            .set({
              status: 'paid',
              ...paymentColumns(payment),
              ...pendingColumns(null),
              // A job in escrow keeps the contract's deadline (the chain decides it); others are due after their SLA.
              dueAt: payment.job
                ? null
                : sql`${payment.at.getTime()}::bigint + ${tasks.slaSeconds}::bigint * 1000`,
            })
            .where(
              and(
                eq(tasks.id, id),
                eq(tasks.status, 'pending_payment'),
                or(isNull(tasks.expiresAt), gt(tasks.expiresAt, payment.at.getTime())),
              ),
            )
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
          .where(and(eq(tasks.id, change.id), inArray(tasks.status, [...change.from])))
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
          .where(
            and(
              eq(tasks.id, id),
              isNull(tasks.rating),
              inArray(tasks.status, ['completed', 'rejected', 'expired']),
              isNotNull(tasks.paidAt),
            ),
          )
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
            ${TRUST_TOTALS}
          where name_key = ${done.agentKey}`)
        await insertEvents(tx, newEvents)
        return true
      })
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
      const ids = await claimFair(db, QUEUES.rechecks, now, leaseUntil, share)
      if (ids.length === 0) return []
      return withAgentNames(await db.select().from(tasks).where(inArray(tasks.id, ids)))
    },

    async setPendingCheck(id, check) {
      await db
        .update(tasks)
        .set(pendingColumns(check))
        .where(and(eq(tasks.id, id), eq(tasks.status, 'pending_payment')))
    },

    async countPendingChecks(clientKey) {
      const [counted] = await db
        .select({ total: sql<number>`count(*)::int` })
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
      // Rows another node is expiring are skipped, not waited for: each node takes its own share.
      const expired = await db.execute(sql`update tasks set status = 'expired', pending_tx_hash = null,
          pending_signature = null, recheck_attempts = null, next_recheck_at = null
        where id in (select id from tasks where status = 'pending_payment' and expires_at <= ${now.getTime()}::bigint
          limit ${limit} for update skip locked)
        returning 1`)
      const purged = await db.execute(sql`delete from tasks where id in (select id from tasks
          where status = 'expired' and paid_at is null and expires_at <= ${purgeBefore.getTime()}::bigint
          limit ${limit} for update skip locked)
        returning 1`)
      return { expired: expired.length, purged: purged.length }
    },
  }
}
