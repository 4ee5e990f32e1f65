import type { FairShare } from '@agentmarket/core'
import { type SQL, sql } from 'drizzle-orm'
import type { SqlDialect } from './dialect.ts'

/**
 * A table the fair claim picks from (core FairQueue.ts), named for raw SQL: every string is a constant of this
 * package, never input. The outbox, webhook deliveries and payment re-checks each have one (QUEUES).
 */
export type FairQueueTable = {
  table: string
  /** Whose item it is and where it goes: SQL expressions over the table's columns. */
  tenant: string
  endpoint: string
  /** The due time and the end of a running attempt's lease (null: not leased). */
  dueAt: string
  leasedUntil: string
  /** Neither done nor given up. */
  pending: string
  /**
   * True when `endpoint` is a column indexed with (endpoint, dueAt, id) under `pending`: the claim then walks the
   * endpoints with pending items and reads each one's first `perEndpoint` due items, never the rest of a backlog.
   */
  indexedEndpoint: boolean
  /** What a claim sets besides the lease (an attempt counter), as SQL; null: nothing. */
  onClaim: string | null
}

/** The three queues that claim by the fair policy. */
export const QUEUES = {
  webhooks: {
    table: 'webhook_deliveries',
    tenant: 'tenant',
    endpoint: 'webhook_id',
    dueAt: 'next_attempt_at',
    leasedUntil: 'leased_until',
    pending: 'delivered_at is null and failed_at is null',
    indexedEndpoint: true,
    onClaim: 'attempts = attempts + 1',
  },
  mail: {
    table: 'outbox',
    tenant: 'tenant',
    endpoint: 'endpoint',
    dueAt: 'next_attempt_at',
    leasedUntil: 'leased_until',
    pending: 'sent_at is null and failed_at is null',
    indexedEndpoint: true,
    onClaim: 'attempts = attempts + 1',
  },
  // A client has at most MAX_RECHECKS_PER_CLIENT checks, so this backlog is bounded without an endpoint walk.
  rechecks: {
    table: 'tasks',
    tenant: 'agent_key',
    endpoint: "coalesce(nullif(client_key, ''), 'task:' || id)",
    dueAt: 'next_recheck_at',
    leasedUntil: 'recheck_leased_until',
    pending: "status = 'pending_payment' and next_recheck_at is not null",
    indexedEndpoint: false,
    onClaim: null,
  },
} as const satisfies Record<string, FairQueueTable>

/**
 * An endpoint's first `perEndpoint` due items, read by seeks in its (endpoint, due, id) index: SQLite joins them by
 * rowid, PostgreSQL by a lateral subquery.
 */
function firstDueOfEach(
  dialect: SqlDialect,
  queue: FairQueueTable,
  columns: SQL,
  now: number,
  perEndpoint: number,
) {
  const raw = sql.raw
  const due = sql`${raw(queue.endpoint)} = walk.endpoint_key and ${raw(queue.pending)}
    and ${raw(queue.dueAt)} <= ${dialect.long(now)}`
  if (dialect.name === 'sqlite')
    return sql`select ${columns} from walk join ${raw(queue.table)} on ${raw(queue.table)}.rowid in (
        select rowid from ${raw(queue.table)} where ${due}
        order by ${raw(queue.dueAt)}, id limit ${perEndpoint})`
  return sql`select picked.* from walk cross join lateral (
      select ${columns} from ${raw(queue.table)} where ${due}
      order by ${raw(queue.dueAt)}, id collate "C" limit ${perEndpoint}::int) as picked
    where walk.endpoint_key is not null`
}

/**
 * The due items as (id, tenant, endpoint, due_at), at most `perEndpoint` per endpoint when the endpoint is indexed
 * (the only ones the policy can take: an endpoint's later items are past its quota whatever is in flight), after the
 * common table `walk` (the endpoints with pending items) that it reads then.
 */
function dueItems(
  dialect: SqlDialect,
  queue: FairQueueTable,
  now: number,
  perEndpoint: number,
): { walk: SQL; due: SQL } {
  const raw = sql.raw
  const columns = sql`id, ${raw(queue.tenant)} as tenant, ${raw(queue.endpoint)} as endpoint, ${raw(queue.dueAt)} as due_at`
  if (!queue.indexedEndpoint)
    return {
      walk: sql`walk(endpoint_key) as (select cast(null as text))`,
      due: sql`select ${columns} from ${raw(queue.table)}
        where ${raw(queue.pending)} and ${raw(queue.dueAt)} <= ${dialect.long(now)}`,
    }
  // A skip scan: each step is one seek in the (endpoint, due, id) index for the next endpoint with pending items.
  return {
    walk: sql`walk(endpoint_key) as (
      select min(${raw(queue.endpoint)}) from ${raw(queue.table)} where ${raw(queue.pending)}
      union all
      select (select min(${raw(queue.endpoint)}) from ${raw(queue.table)}
        where ${raw(queue.pending)} and ${raw(queue.endpoint)} > walk.endpoint_key)
      from walk where walk.endpoint_key is not null)`,
    due: firstDueOfEach(dialect, queue, columns, now, perEndpoint),
  }
}

/**
 * The ids core's pickFair takes (FairQueue.ts) from the items of `queue` due at `now`, as SQL: per-endpoint then
 * per-tenant quotas counting the items in flight (leased past `now`), then round-robin across tenants by their rank.
 * Ids compare byte-wise, as the core compares them. One builder for every queue and both stores, so the claims cannot
 * drift apart.
 */
export function fairPick(
  dialect: SqlDialect,
  queue: FairQueueTable,
  now: number,
  { limit, perTenant, perEndpoint }: FairShare,
): SQL {
  const raw = sql.raw
  const { walk, due } = dueItems(dialect, queue, now, perEndpoint)
  const { bytewise } = dialect
  // `busy` is read once, by the in-flight index: read twice, a planner may count it off the whole pending index.
  return sql`
  with recursive ${walk},
  busy as materialized (
    select ${raw(queue.tenant)} as tenant, ${raw(queue.endpoint)} as endpoint from ${raw(queue.table)}
    where ${raw(queue.leasedUntil)} > ${dialect.long(now)} and ${raw(queue.pending)}),
  busy_tenants as (select tenant, count(*) as n from busy group by tenant),
  busy_endpoints as (select endpoint, count(*) as n from busy group by endpoint),
  due as (
    select id, tenant, endpoint, due_at,
      row_number() over (partition by endpoint order by due_at, id${bytewise}) as endpoint_rank
    from (${due}) as due_items),
  endpoints_free as (
    select due.id, due.tenant, due.due_at,
      row_number() over (partition by due.tenant order by due.due_at, due.id${bytewise}) as tenant_rank
    from due left join busy_endpoints on busy_endpoints.endpoint = due.endpoint
    where due.endpoint_rank + coalesce(busy_endpoints.n, 0) <= ${dialect.int(perEndpoint)})
  select endpoints_free.id from endpoints_free
    left join busy_tenants on busy_tenants.tenant = endpoints_free.tenant
  where endpoints_free.tenant_rank + coalesce(busy_tenants.n, 0) <= ${dialect.int(perTenant)}
  order by endpoints_free.tenant_rank, endpoints_free.due_at, endpoints_free.id${bytewise}
  limit ${dialect.int(limit)}`
}
