import type { MailStore } from '@agentmarket/core'
import { toOutboxEntry, toOutboxRow, toTaskRow } from '@agentmarket/core/rows'
import { fairPick, inQueueOrder, mailQueries, mailReads, QUEUES, sqliteSql } from '@agentmarket/store-sql'
import { and, lte, sql } from 'drizzle-orm'
import { budgetCaps, OverCap } from './budgetUsage.ts'
import { sqliteExecutor } from './executor.ts'
import type { Database } from './open.ts'
import { orderMails, outbox, tasks } from './schema.ts'
import { batchWriter, isUniqueViolation } from './writes.ts'

const { pending } = mailQueries(outbox)

/** The order-mail and outbox methods of the libSQL Store. */
export function mailStore(database: Database): MailStore {
  const { db, connection } = database
  const { writeBatch, insertEvents } = batchWriter(database)
  const { withinCap } = budgetCaps(database)

  return {
    ...mailReads(sqliteExecutor(database)),

    async acceptOrderMail({ key, receivedAt, task, events, reply, cap }) {
      // The key goes in first: a duplicate fails the whole batch before the task or the reply is written.
      try {
        await writeBatch([
          db
            .insert(orderMails)
            .values({ key, taskId: task?.id ?? null, replyId: reply.id, receivedAt: receivedAt.getTime() }),
          ...(task && cap ? [withinCap(task, cap)] : []),
          ...(task ? [db.insert(tasks).values(toTaskRow(task))] : []),
          ...insertEvents(events),
          db.insert(outbox).values(toOutboxRow(reply)),
        ])
        return 'accepted'
      } catch (error) {
        if (error instanceof OverCap) return 'budget_exceeded'
        if (isUniqueViolation(error, 'order_mails.key')) return 'duplicate'
        throw error
      }
    },

    async claimDueMail(now, leaseUntil, share) {
      // Most passes find nothing due: a read answers them without taking the database's write lock.
      const [any] = await db
        .select({ id: outbox.id })
        .from(outbox)
        .where(and(pending, lte(outbox.nextAttemptAt, now.getTime())))
        .limit(1)
      if (!any) return []
      // One UPDATE picks (the fair policy) and leases, so two senders racing split the entries and never pass a quota.
      const rows = await connection.unlocked(() =>
        db
          .update(outbox)
          .set({
            attempts: sql`${outbox.attempts} + 1`,
            nextAttemptAt: leaseUntil.getTime(),
            leasedUntil: leaseUntil.getTime(),
          })
          .where(
            and(
              sql`${outbox.id} in (${fairPick(sqliteSql, QUEUES.mail, now.getTime(), share)})`,
              pending,
              lte(outbox.nextAttemptAt, now.getTime()),
            ),
          )
          .returning()
          .all(),
      )
      return inQueueOrder(rows).map(toOutboxEntry)
    },
  }
}
