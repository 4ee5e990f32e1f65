import type { WebhookEventType } from '@agentmarket/core'

// Who receives each webhook event: one cell per event type (core WEBHOOK_EVENT_TYPES) and kind of endpoint, written
// out. tests/security/access/webhooks.test.ts makes each event happen to a fresh task and fails when an event type has
// no row, a row misses a kind, or a delivery reaches an endpoint its cell says must not get it.

/**
 * The endpoints asked about: `seller` the task's seller's own endpoint (every task of it); `otherSeller` another
 * seller's; `taskBuyer` the buyer's endpoint on the task; `otherTaskBuyer` another buyer's endpoint on another task of
 * the same seller.
 */
export const ENDPOINT_KINDS = ['seller', 'otherSeller', 'taskBuyer', 'otherTaskBuyer'] as const
/** One kind of endpoint. */
export type EndpointKind = (typeof ENDPOINT_KINDS)[number]

/** Whether the endpoint gets the event's delivery (signed under its own secret, the task as its buyer reads it). */
export type Receipt = 'delivered' | 'nothing'

const GETS: Receipt = 'delivered'
const NONE: Receipt = 'nothing'

/** A row: one cell per kind, in the order of ENDPOINT_KINDS. */
const cells = (...row: [Receipt, Receipt, Receipt, Receipt]): Record<EndpointKind, Receipt> => {
  const [seller, otherSeller, taskBuyer, otherTaskBuyer] = row
  return { seller, otherSeller, taskBuyer, otherTaskBuyer }
}

/** WEBHOOK_ACCESS[event type][endpoint kind]: who receives that event of a task. */
// biome-ignore format: a table, one column per endpoint kind
export const WEBHOOK_ACCESS: Record<WebhookEventType, Record<EndpointKind, Receipt>> = {
  //                       seller  otherSeller  taskBuyer  otherTaskBuyer
  'task.paid':       cells(GETS,   NONE,        GETS,      NONE),
  'task.delivered':  cells(GETS,   NONE,        GETS,      NONE),
  'task.completed':  cells(GETS,   NONE,        GETS,      NONE),
  'task.expired':    cells(GETS,   NONE,        GETS,      NONE),
  'task.refunded':   cells(GETS,   NONE,        GETS,      NONE),
}

/** An event type whose cells wait on another branch's fix (issue 37); run as test.todo, with the reason. */
export type PendingEvent = { type: WebhookEventType; why: string }

/** Event types whose row cannot pass on this branch yet: none; every type is made to happen for real. */
export const PENDING_EVENTS: readonly PendingEvent[] = []
