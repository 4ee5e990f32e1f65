import type { WebhookStore } from '@agentmarket/core'
import { toDeliveryRecord, toWebhookRow } from '@agentmarket/core/rows'
import { inQueueOrder, QUEUES, webhookQueries, webhookReads } from '@agentmarket/store-sql'
import { and, count, eq, inArray, sql } from 'drizzle-orm'
import { postgresExecutor } from './executor.ts'
import { claimFair } from './fairQueue.ts'
import type { PostgresDatabase } from './open.ts'
import { webhookDeliveries, webhooks } from './schema.ts'

const { ownedBy } = webhookQueries(webhooks, webhookDeliveries)

/** The webhook methods of the PostgreSQL Store: endpoints, and their outbox claimed like the mail's. */
export function webhookStore(database: PostgresDatabase): WebhookStore {
  const { db } = database
  return {
    ...webhookReads(postgresExecutor(database)),

    async insertWebhook(webhook, max) {
      // The owner's advisory lock makes count-then-insert one at a time on every node.
      return db.transaction(async (tx) => {
        const owner = `webhooks:${webhook.agentKey}:${webhook.taskId ?? ''}`
        await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${owner}, 0))`)
        const [held] = await tx
          .select({ n: count() })
          .from(webhooks)
          .where(ownedBy(webhook.agentKey, webhook.taskId))
        if ((held?.n ?? 0) >= max) return false
        await tx.insert(webhooks).values(toWebhookRow(webhook))
        return true
      })
    },

    async deleteWebhook(id, agentKey, taskId) {
      // Its deliveries go with it (ON DELETE CASCADE).
      const removed = await db
        .delete(webhooks)
        .where(and(eq(webhooks.id, id), ownedBy(agentKey, taskId)))
        .returning({ id: webhooks.id })
      return removed.length === 1
    },

    async enqueueDeliveries(list, backlogMax) {
      if (list.length === 0) return
      /** An endpoint's pending deliveries, counted up to the cap only (the pending index, at most the cap's rows). */
      const backlog = (webhookId: string) => sql`(select count(*) from (select 1 from webhook_deliveries
          where webhook_id = ${webhookId} and delivered_at is null and failed_at is null limit ${backlogMax}::int)
          as pending_deliveries)`
      // A delivery of an endpoint deleted meanwhile is dropped with it; one already queued is kept as it is; one
      // past the endpoint's backlog cap is counted on the endpoint instead of queued.
      await db.transaction(async (tx) => {
        for (const delivery of list) {
          await tx.execute(sql`update webhooks set dropped_deliveries = dropped_deliveries + 1
            where id = ${delivery.webhookId} and ${backlog(delivery.webhookId)} >= ${backlogMax}::int
              and not exists (select 1 from webhook_deliveries
                where webhook_id = ${delivery.webhookId} and event_id = ${delivery.eventId})`)
          await tx.execute(sql`insert into webhook_deliveries (id, webhook_id, tenant, event_id, url, type,
              payload, created_at, attempts, next_attempt_at)
            select ${delivery.id}, ${delivery.webhookId}, ${delivery.tenant}, ${delivery.eventId}, ${delivery.url},
              ${delivery.type}, ${delivery.payload},
              ${delivery.createdAt.getTime()}::bigint, 0, ${delivery.nextAttemptAt.getTime()}::bigint
            where exists (select 1 from webhooks where id = ${delivery.webhookId})
              and ${backlog(delivery.webhookId)} < ${backlogMax}::int
            on conflict (webhook_id, event_id) do nothing`)
        }
      })
    },

    async claimDueDeliveries(now, leaseUntil, share) {
      const ids = await claimFair(db, QUEUES.webhooks, now, leaseUntil, share)
      if (ids.length === 0) return []
      const claimed = await db.select().from(webhookDeliveries).where(inArray(webhookDeliveries.id, ids))
      return inQueueOrder(claimed).map(toDeliveryRecord)
    },
  }
}
