import type { WebhookDelivery, WebhookEventType, WebhookOutcome, WebhookRecord } from '../Webhook.ts'
import { dateOf, ms } from './columns.ts'

/** An endpoint's row (`webhooks`); `events` is JSON text. */
export type WebhookRow = {
  id: string
  agentKey: string
  taskId: string | null
  url: string
  events: string
  createdAt: number
  afterEventId: string
  droppedDeliveries: number
  addedBy: string
}

/** A delivery's row (`webhook_deliveries`). */
export type WebhookDeliveryRow = {
  id: string
  webhookId: string
  tenant: string
  eventId: string
  url: string
  type: string
  payload: string
  createdAt: number
  attempts: number
  nextAttemptAt: number
  leasedUntil: number | null
  deliveredAt: number | null
  failedAt: number | null
  lastStatus: number | null
  lastError: string | null
  lastLatencyMs: number | null
}

/** The row of an endpoint. */
export function toWebhookRow(webhook: WebhookRecord): WebhookRow {
  return { ...webhook, events: JSON.stringify(webhook.events), createdAt: webhook.createdAt.getTime() }
}

/** The record of an endpoint row. */
export function toWebhookRecord(row: WebhookRow): WebhookRecord {
  return {
    id: row.id,
    agentKey: row.agentKey,
    taskId: row.taskId,
    url: row.url,
    events: JSON.parse(row.events) as WebhookEventType[],
    createdAt: new Date(row.createdAt),
    afterEventId: row.afterEventId,
    droppedDeliveries: row.droppedDeliveries,
    addedBy: row.addedBy,
  }
}

/** The row of a delivery. */
export function toDeliveryRow(delivery: WebhookDelivery): WebhookDeliveryRow {
  return {
    ...delivery,
    createdAt: delivery.createdAt.getTime(),
    nextAttemptAt: delivery.nextAttemptAt.getTime(),
    leasedUntil: ms(delivery.leasedUntil),
    deliveredAt: ms(delivery.deliveredAt),
    failedAt: ms(delivery.failedAt),
  }
}

/** The record of a delivery row. */
export function toDeliveryRecord(row: WebhookDeliveryRow): WebhookDelivery {
  return {
    ...row,
    type: row.type as WebhookEventType,
    createdAt: new Date(row.createdAt),
    nextAttemptAt: new Date(row.nextAttemptAt),
    leasedUntil: dateOf(row.leasedUntil),
    deliveredAt: dateOf(row.deliveredAt),
    failedAt: dateOf(row.failedAt),
  }
}

/** The columns an attempt's outcome sets (its lease ends: it is no longer in flight). */
export function settledColumns(outcome: WebhookOutcome): Partial<WebhookDeliveryRow> {
  const last = {
    leasedUntil: null,
    lastStatus: outcome.status,
    lastLatencyMs: outcome.latencyMs === null ? null : Math.round(outcome.latencyMs),
  }
  if (outcome.outcome === 'delivered') return { ...last, deliveredAt: outcome.at.getTime(), lastError: null }
  if (outcome.outcome === 'failed')
    return { ...last, failedAt: outcome.at.getTime(), lastError: outcome.error }
  return {
    ...last,
    lastError: outcome.error,
    nextAttemptAt: ms(outcome.nextAttemptAt) ?? outcome.at.getTime(),
  }
}
