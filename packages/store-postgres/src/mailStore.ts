import type { MailStore } from '@agentmarket/core'
import { toOutboxEntry, toOutboxRow, toTaskRow } from '@agentmarket/core/rows'
import { inQueueOrder, mailReads, QUEUES } from '@agentmarket/store-sql'
import { inArray, TransactionRollbackError } from 'drizzle-orm'
import { insertEvents } from './agentStore.ts'
import { overCap } from './budgetUsage.ts'
import { postgresExecutor } from './executor.ts'
import { claimFair } from './fairQueue.ts'
import type { PostgresDatabase } from './open.ts'
import { orderMails, outbox, tasks } from './schema.ts'
import { brokenConstraint } from './taskStore.ts'

/** The order-mail and outbox methods of the PostgreSQL Store. */
export function mailStore(database: PostgresDatabase): MailStore {
  const { db } = database
  return {
    ...mailReads(postgresExecutor(database)),

    async acceptOrderMail({ key, receivedAt, task, events, reply, cap }) {
      // The key goes in first: a duplicate fails the whole transaction before the task or the reply is written.
      try {
        return await db.transaction(async (tx) => {
          await tx
            .insert(orderMails)
            .values({ key, taskId: task?.id ?? null, replyId: reply.id, receivedAt: receivedAt.getTime() })
          // Over its buyer's budget: nothing of it lands (the key neither, so the refusal is recorded instead).
          if (task && cap && (await overCap(tx, task, cap))) {
            tx.rollback()
          }
          if (task) await tx.insert(tasks).values(toTaskRow(task))
          await insertEvents(tx, events)
          await tx.insert(outbox).values(toOutboxRow(reply))
          return 'accepted' as const
        })
      } catch (error) {
        if (error instanceof TransactionRollbackError) return 'budget_exceeded'
        if (brokenConstraint(error) === 'order_mails_pkey') return 'duplicate'
        throw error
      }
    },

    async claimDueMail(now, leaseUntil, share) {
      const ids = await claimFair(db, QUEUES.mail, now, leaseUntil, share)
      if (ids.length === 0) return []
      const claimed = await db.select().from(outbox).where(inArray(outbox.id, ids))
      return inQueueOrder(claimed).map(toOutboxEntry)
    },
  }
}
