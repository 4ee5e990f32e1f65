import type { WebhookStore } from '@agentmarket/core'
import { toDeliveryRecord, toDeliveryRow, toWebhookRow } from '@agentmarket/core/rows'
import {
  fairPick,
  inQueueOrder,
  QUEUES,
  sqliteSql,
  webhookQueries,
  webhookReads,
} from '@agentmarket/store-sql'
import { and, eq, inArray, lte, sql } from 'drizzle-orm'
import { sqliteExecutor } from './executor.ts'
import type { Database } from './open.ts'
import { webhookDeliveries, webhooks } from './schema.ts'
import { batchWriter } from './writes.ts'

const { pending, ownedBy } = webhookQueries(webhooks, webhookDeliveries)

/** The webhook methods of the libSQL Store: endpoints, and their outbox claimed with leases like the mail's. */
export function webhookStore(database: Database): WebhookStore {
  const { db, connection } = database
  const { writeBatch } = batchWriter(database)
  return {
    ...webhookReads(sqliteExecutor(database)),

    async insertWebhook(webhook, max) {
      // Counted and inserted in one write transaction: racing inserts never pass `max`.
      const [landed] = await writeBatch([
        () => {
          const row = toWebhookRow(webhook)
          return connection.run(
            `insert into webhooks (id, agent_key, task_id, url, events, created_at, after_event_id, added_by)
              select ?, ?, ?, ?, ?, ?, ?, ? where (select count(*) from webhooks
                where agent_key = ? and task_id is ?) < ?`,
            [
              row.id,
              row.agentKey,
              row.taskId,
              row.url,
              row.events,
              row.createdAt,
              row.afterEventId,
              row.addedBy,
              row.agentKey,
              row.taskId,
              max,
            ],
          )
        },
      ])
      return (landed?.changes ?? 0) === 1
    },

    async deleteWebhook(id, agentKey, taskId) {
      const [, removed] = await writeBatch([
        db.delete(webhookDeliveries).where(
          inArray(
            webhookDeliveries.webhookId,
            db
              .select({ id: webhooks.id })
              .from(webhooks)
              .where(and(eq(webhooks.id, id), ownedBy(agentKey, taskId))),
          ),
        ),
        db.delete(webhooks).where(and(eq(webhooks.id, id), ownedBy(agentKey, taskId))),
      ])
      return (removed?.changes ?? 0) === 1
    },

    async enqueueDeliveries(list, backlogMax) {
      if (list.length === 0) return
      // An endpoint's pending deliveries, counted up to the cap only (the pending index, at most `backlogMax` rows).
      const backlog = `(select count(*) from (select 1 from webhook_deliveries
          where webhook_id = ? and delivered_at is null and failed_at is null limit ?))`
      // A delivery of an endpoint deleted meanwhile is dropped with it; one already queued is kept as it is; one
      // past the endpoint's backlog cap is counted on the endpoint instead of queued.
      await writeBatch(
        list.flatMap((delivery) => {
          const row = toDeliveryRow(delivery)
          const drop = () =>
            connection.run(
              `update webhooks set dropped_deliveries = dropped_deliveries + 1
                where id = ? and ${backlog} >= ?
                  and not exists (select 1 from webhook_deliveries where webhook_id = ? and event_id = ?)`,
              [row.webhookId, row.webhookId, backlogMax, backlogMax, row.webhookId, row.eventId],
            )
          const queue = () =>
            connection.run(
              `insert into webhook_deliveries (id, webhook_id, tenant, event_id, url, type, payload, created_at,
                  attempts, next_attempt_at)
                select ?, ?, ?, ?, ?, ?, ?, ?, 0, ? where exists (select 1 from webhooks where id = ?)
                  and ${backlog} < ?
                on conflict (webhook_id, event_id) do nothing`,
              [
                row.id,
                row.webhookId,
                row.tenant,
                row.eventId,
                row.url,
                row.type,
                row.payload,
                row.createdAt,
                row.nextAttemptAt,
                row.webhookId,
                row.webhookId,
                backlogMax,
                backlogMax,
              ],
            )
          return [drop, queue]
        }),
      )
    },

    async claimDueDeliveries(now, leaseUntil, share) {
      // Most passes find nothing due: a read answers them without taking the database's write lock.
      const [any] = await db
        .select({ id: webhookDeliveries.id })
        .from(webhookDeliveries)
        .where(and(pending, lte(webhookDeliveries.nextAttemptAt, now.getTime())))
        .limit(1)
      if (!any) return []
      // One statement: the pick and the lease are one write, so racing senders never exceed a quota.
      const rows = await connection.unlocked(() =>
        db
          .update(webhookDeliveries)
          .set({
            attempts: sql`${webhookDeliveries.attempts} + 1`,
            nextAttemptAt: leaseUntil.getTime(),
            leasedUntil: leaseUntil.getTime(),
          })
          .where(
            and(
              sql`${webhookDeliveries.id} in (${fairPick(sqliteSql, QUEUES.webhooks, now.getTime(), share)})`,
              pending,
              lte(webhookDeliveries.nextAttemptAt, now.getTime()),
            ),
          )
          .returning()
          .all(),
      )
      return inQueueOrder(rows).map(toDeliveryRecord)
    },
  }
}
