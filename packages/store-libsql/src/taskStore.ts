import type { TaskStore } from '@agentmarket/core'
import type { TaskRow } from '@agentmarket/core/rows'
import { nameKey, ratingColumns, toEventRow, toTaskRecord, toTaskRow } from '@agentmarket/core/rows'
import { fairPick, QUEUES, sqliteSql, taskReads, taskWrites } from '@agentmarket/store-sql'
import { and, eq, lte, sql } from 'drizzle-orm'
import { budgetCaps, OverCap } from './budgetUsage.ts'
import { sqliteExecutor } from './executor.ts'
import type { Database } from './open.ts'
import { agents, events, tasks, trustBuyers } from './schema.ts'
import { named, shapedRead } from './shapedReads.ts'
import { trustStatements, trustTotalsSet } from './trustCredit.ts'
import { batchWriter, isUniqueViolation } from './writes.ts'

/** Which claim a unique violation broke, if it was one of a task's claims. */
function brokenClaim(error: unknown): 'tx_already_used' | 'escrow_task_id_used' | 'idempotency' | null {
  if (isUniqueViolation(error, 'tasks.tx_hash')) return 'tx_already_used'
  if (isUniqueViolation(error, 'tasks.escrow_task_id')) return 'escrow_task_id_used'
  if (isUniqueViolation(error, 'tasks.idempotency_key')) return 'idempotency'
  return null
}

/** The task methods of the libSQL Store: every state change is a compare-and-set inside one write transaction. */
export function taskStore(database: Database): TaskStore {
  const { db } = database
  const { writeBatch, insert, insertEvents } = batchWriter(database)

  const x = sqliteExecutor(database)
  const { withAgentNames, ...reads } = taskReads(x)
  const { changedColumns, inStatus, paidColumns, payable, ratable } = taskWrites(x)

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
          (await reads.findIdempotentAnswer(task.agentName, task.clientKey, task.idempotency.key))
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

    async markTaskPaid(id, payment, newEvents) {
      // The single UPDATE is the compare-and-set; its unique keys claim the hash and the escrow task id.
      try {
        const [update] = await writeBatch([
          db.update(tasks).set(paidColumns(payment)).where(payable(id, payment)),
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
        db.update(tasks).set(changedColumns(change)).where(inStatus(id, from)),
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
        db.update(tasks).set(ratingColumns(rating)).where(ratable(id)),
        ...(counted ? counting : []),
        ...eventsIfChanged(newEvents),
      ])
      return (rated?.changes ?? 0) === 1
    },

    ...reads,

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

    async expireTasks(now, purgeBefore, limit) {
      const [expired, purged] = await writeBatch([
        sql`update ${tasks} set status = 'expired', pending_tx_hash = null, pending_signature = null,
              recheck_attempts = null, next_recheck_at = null
            where id in (select id from ${tasks} where status = 'pending_payment' and expires_at <= ${now.getTime()}
              and pending_tx_hash is null limit ${limit})`,
        sql`delete from ${tasks} where id in (select id from ${tasks}
              where status = 'expired' and paid_at is null and expires_at <= ${purgeBefore.getTime()}
              limit ${limit})`,
      ])
      return { expired: expired?.changes ?? 0, purged: purged?.changes ?? 0 }
    },
  }
}
