import type { WebhookStore } from '@agentmarket/core'
import { settledColumns, toDeliveryRecord, toWebhookRecord } from '@agentmarket/core/rows'
import { and, asc, type Column, desc, eq, isNull, or, type SQL } from 'drizzle-orm'
import type { Executor } from './executor.ts'

/** The webhook columns these queries read, in either dialect's tables. */
type Webhooks = Record<'id' | 'agentKey' | 'taskId' | 'createdAt', Column>
/** The delivery columns these queries read. */
type Deliveries = Record<'id' | 'createdAt' | 'deliveredAt' | 'failedAt', Column>

/**
 * The conditions and orders of the webhook queries, the same in both stores (each store runs them on its driver).
 * @example db.select().from(webhooks).where(q.ownedBy(agentKey, null)).orderBy(...q.oldestFirst)
 */
export function webhookQueries(webhooks: Webhooks, deliveries: Deliveries) {
  return {
    /** A delivery neither delivered nor given up. */
    pending: and(isNull(deliveries.deliveredAt), isNull(deliveries.failedAt)) as SQL,
    /** The endpoints of an owner: the agent's own (`taskId` null) or one task's. */
    ownedBy: (agentKey: string, taskId: string | null): SQL | undefined =>
      and(
        eq(webhooks.agentKey, agentKey),
        taskId === null ? isNull(webhooks.taskId) : eq(webhooks.taskId, taskId),
      ),
    /** The endpoints a task's events go to: the seller's own and the task's. */
    servingTask: (agentKey: string, taskId: string): SQL | undefined =>
      and(eq(webhooks.agentKey, agentKey), or(isNull(webhooks.taskId), eq(webhooks.taskId, taskId))),
    /** Endpoints in the order they were added. */
    oldestFirst: [asc(webhooks.createdAt), asc(webhooks.id)],
    /** An endpoint's deliveries, the latest first. */
    latestDeliveriesFirst: [desc(deliveries.createdAt), desc(deliveries.id)],
  }
}

/** Claimed rows in the order they were queued (time, then id byte-wise), as the Store port answers a claim. */
export function inQueueOrder<Row extends { createdAt: number; id: string }>(rows: Row[]): Row[] {
  return rows.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))
}

/** The webhook methods both stores run alike, over a store's executor. */
export function webhookReads(
  x: Executor,
): Pick<WebhookStore, 'listWebhooks' | 'webhooksFor' | 'settleDelivery' | 'listDeliveries'> {
  const { webhooks, webhookDeliveries } = x.tables
  const { pending, ownedBy, servingTask, oldestFirst, latestDeliveriesFirst } = webhookQueries(
    webhooks,
    webhookDeliveries,
  )
  return {
    async listWebhooks(agentKey, taskId) {
      const rows = await x.rows({ from: 'webhooks', where: ownedBy(agentKey, taskId), orderBy: oldestFirst })
      return rows.map(toWebhookRecord)
    },

    async webhooksFor(agentKey, taskId) {
      const rows = await x.rows({
        from: 'webhooks',
        where: servingTask(agentKey, taskId),
        orderBy: oldestFirst,
      })
      return rows.map(toWebhookRecord)
    },

    async settleDelivery(id, outcome) {
      await x.change('webhookDeliveries', settledColumns(outcome), and(eq(webhookDeliveries.id, id), pending))
    },

    async listDeliveries(webhookId, limit) {
      const rows = await x.rows({
        from: 'webhookDeliveries',
        where: eq(webhookDeliveries.webhookId, webhookId),
        orderBy: latestDeliveriesFirst,
        limit,
      })
      return rows.map(toDeliveryRecord)
    },
  }
}
