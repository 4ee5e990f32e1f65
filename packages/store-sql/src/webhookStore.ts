import { and, asc, type Column, desc, eq, isNull, or, type SQL } from 'drizzle-orm'

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
