import {
  type FairShare,
  type Store,
  settledColumns,
  toDeliveryRecord,
  toWebhookRecord,
  toWebhookRow,
} from '@agentmarket/core'
import { and, asc, count, desc, eq, inArray, isNull, or, type SQL, sql } from 'drizzle-orm'
import type { PostgresDatabase } from './open.ts'
import { webhookDeliveries, webhooks } from './schema.ts'

type WebhookMethods = Pick<
  Store,
  | 'insertWebhook'
  | 'listWebhooks'
  | 'deleteWebhook'
  | 'webhooksFor'
  | 'enqueueDeliveries'
  | 'claimDueDeliveries'
  | 'settleDelivery'
  | 'listDeliveries'
>

const pending = and(isNull(webhookDeliveries.deliveredAt), isNull(webhookDeliveries.failedAt))

/**
 * The ids core's pickFair takes (FairQueue.ts) from the deliveries due at `now`, as SQL: per-endpoint then per-tenant
 * quotas counting the attempts in flight (leased past `now`), then round-robin across tenants by their rank.
 */
const fairPick = (now: number, { limit, perTenant, perEndpoint }: FairShare): SQL => sql`
  with busy as (
    select tenant, webhook_id from webhook_deliveries
    where leased_until > ${now}::bigint and delivered_at is null and failed_at is null),
  busy_tenants as (select tenant, count(*) as n from busy group by tenant),
  busy_endpoints as (select webhook_id, count(*) as n from busy group by webhook_id),
  due as (
    select id, tenant, webhook_id, next_attempt_at,
      row_number() over (partition by webhook_id order by next_attempt_at, id) as endpoint_rank
    from webhook_deliveries
    where delivered_at is null and failed_at is null and next_attempt_at <= ${now}::bigint),
  endpoints_free as (
    select due.id, due.tenant, due.next_attempt_at,
      row_number() over (partition by due.tenant order by due.next_attempt_at, due.id) as tenant_rank
    from due left join busy_endpoints on busy_endpoints.webhook_id = due.webhook_id
    where due.endpoint_rank + coalesce(busy_endpoints.n, 0) <= ${perEndpoint}::int)
  select endpoints_free.id from endpoints_free
    left join busy_tenants on busy_tenants.tenant = endpoints_free.tenant
  where endpoints_free.tenant_rank + coalesce(busy_tenants.n, 0) <= ${perTenant}::int
  order by endpoints_free.tenant_rank, endpoints_free.next_attempt_at, endpoints_free.id
  limit ${limit}::int`

/** The endpoints of an owner: the agent's own (`taskId` null) or one task's. */
const ownedBy = (agentKey: string, taskId: string | null): SQL | undefined =>
  and(
    eq(webhooks.agentKey, agentKey),
    taskId === null ? isNull(webhooks.taskId) : eq(webhooks.taskId, taskId),
  )

/** The webhook methods of the PostgreSQL Store: endpoints, and their outbox claimed like the mail's. */
export function webhookStore({ db }: PostgresDatabase): WebhookMethods {
  return {
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

    async listWebhooks(agentKey, taskId) {
      const rows = await db
        .select()
        .from(webhooks)
        .where(ownedBy(agentKey, taskId))
        .orderBy(asc(webhooks.createdAt), asc(webhooks.id))
      return rows.map(toWebhookRecord)
    },

    async deleteWebhook(id, agentKey, taskId) {
      // Its deliveries go with it (ON DELETE CASCADE).
      const removed = await db
        .delete(webhooks)
        .where(and(eq(webhooks.id, id), ownedBy(agentKey, taskId)))
        .returning({ id: webhooks.id })
      return removed.length === 1
    },

    async webhooksFor(agentKey, taskId) {
      const rows = await db
        .select()
        .from(webhooks)
        .where(and(eq(webhooks.agentKey, agentKey), or(isNull(webhooks.taskId), eq(webhooks.taskId, taskId))))
        .orderBy(asc(webhooks.createdAt), asc(webhooks.id))
      return rows.map(toWebhookRecord)
    },

    async enqueueDeliveries(list) {
      if (list.length === 0) return
      // A delivery of an endpoint deleted meanwhile is dropped with it.
      await db.transaction(async (tx) => {
        for (const delivery of list)
          await tx.execute(sql`insert into webhook_deliveries (id, webhook_id, tenant, event_id, url, type,
              payload, created_at, attempts, next_attempt_at)
            select ${delivery.id}, ${delivery.webhookId}, ${delivery.tenant}, ${delivery.eventId}, ${delivery.url}, ${delivery.type},
              ${delivery.payload},
              ${delivery.createdAt.getTime()}::bigint, 0, ${delivery.nextAttemptAt.getTime()}::bigint
            where exists (select 1 from webhooks where id = ${delivery.webhookId})
            on conflict (webhook_id, event_id) do nothing`)
      })
    },

    async claimDueDeliveries(now, leaseUntil, share) {
      // Claims take turns (a transaction-scoped advisory lock): the quotas count what every node has in flight, so
      // two nodes picking at once could together pass them. A claim is one short statement.
      const rows = await db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended('webhook_deliveries:claim', 0))`)
        return tx.execute<{ id: string }>(sql`update webhook_deliveries set attempts = attempts + 1,
            next_attempt_at = ${leaseUntil.getTime()}::bigint, leased_until = ${leaseUntil.getTime()}::bigint
          where id in (${fairPick(now.getTime(), share)}) and delivered_at is null and failed_at is null
            and next_attempt_at <= ${now.getTime()}::bigint
          returning id`)
      })
      if (rows.length === 0) return []
      const claimed = await db
        .select()
        .from(webhookDeliveries)
        .where(
          inArray(
            webhookDeliveries.id,
            rows.map((row) => row.id),
          ),
        )
      return claimed.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1)).map(toDeliveryRecord)
    },

    async settleDelivery(id, outcome) {
      await db
        .update(webhookDeliveries)
        .set(settledColumns(outcome))
        .where(and(eq(webhookDeliveries.id, id), pending))
    },

    async listDeliveries(webhookId, limit) {
      const rows = await db
        .select()
        .from(webhookDeliveries)
        .where(eq(webhookDeliveries.webhookId, webhookId))
        .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
        .limit(limit)
      return rows.map(toDeliveryRecord)
    },
  }
}
