import { Webhook } from 'standardwebhooks'
import * as v from 'valibot'
import type { FeedEventKind } from './Feed.ts'
import { isAddressLiteral, isPublicAddress } from './NetworkAddress.ts'
import { withoutTrailing } from './Trim.ts'
import { strictFields } from './Validation.ts'

/** The task events an endpoint may ask for. */
export const WEBHOOK_EVENT_TYPES = [
  'task.paid',
  'task.delivered',
  'task.completed',
  'task.expired',
  'task.refunded',
] as const
/** One of them. */
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number]

/** The webhook type each feed event is sent as (a paid task expiring undelivered is the feed's task.late). */
export const WEBHOOK_TYPE_OF: Partial<Record<FeedEventKind, WebhookEventType>> = {
  'task.paid': 'task.paid',
  'task.delivered': 'task.delivered',
  'task.completed': 'task.completed',
  'task.late': 'task.expired',
  'task.refunded': 'task.refunded',
}

/** The key-value key of where fanning out has reached in the feed (an event id); absent until an endpoint is made. */
export const WEBHOOK_CURSOR = 'webhooks:cursor'

/** How many endpoints a seller, and a task, may have. */
export const MAX_WEBHOOKS = { seller: 10, task: 5 } as const
/** The longest endpoint URL taken. */
export const MAX_WEBHOOK_URL_LENGTH = 2048
/**
 * The most deliveries one endpoint may have pending (not delivered, not given up). A delivery queued past it is
 * dropped and counted on the endpoint (`dropped_deliveries`): a flood of events, or a receiver that never answers,
 * holds at most this many rows, and its owner reads what it missed from the feed (GET /api/feed).
 */
export const WEBHOOK_BACKLOG_MAX = 1_000
/** How long one delivery attempt may take before it counts as failed. */
export const WEBHOOK_TIMEOUT_MS = 10_000
/**
 * The phases of an attempt within WEBHOOK_TIMEOUT_MS: resolving the host, connecting (TCP and TLS), and the answer's
 * first byte once connected. A receiver that accepts and never answers holds its slot 5 s, not 10.
 */
export const WEBHOOK_PHASE_TIMEOUTS_MS = { resolve: 2_000, connect: 3_000, firstByte: 5_000 } as const
/**
 * The waits before each retry of a delivery that failed (exponential, as Standard Webhooks suggests): after the first
 * attempt and 8 retries over about 8 hours the delivery is given up.
 */
export const WEBHOOK_RETRY_DELAYS_MS = [
  5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000,
] as const

/** An endpoint: a seller's (every task of `agentKey`) or a buyer's (one task, `taskId`). */
export type WebhookRecord = {
  id: string
  agentKey: string
  taskId: string | null
  url: string
  events: WebhookEventType[]
  createdAt: Date
  /** The feed's newest event id when it was added: it gets only events after it. */
  afterEventId: string
  /** Deliveries not queued because its backlog was full (WEBHOOK_BACKLOG_MAX); the feed still has their events. */
  droppedDeliveries: number
  /** For a task's endpoint, the client that added it (clientKeyOf its address; '' when the host names none). */
  addedBy: string
}

/** One event for one endpoint, kept until delivered or given up. `id` is its `webhook-id`, the same on every retry. */
export type WebhookDelivery = {
  id: string
  webhookId: string
  /** Whose delivery it is, for the fair claim (FairQueue.ts): webhookTenant of its endpoint. */
  tenant: string
  /** The feed event it reports (its id). */
  eventId: string
  /** Where it goes: the endpoint's URL when it was queued. */
  url: string
  type: WebhookEventType
  /** The exact JSON body signed and sent. */
  payload: string
  createdAt: Date
  /** Attempts started so far. */
  attempts: number
  /** When the next attempt may start (also the end of a running attempt's lease). */
  nextAttemptAt: Date
  /** While an attempt runs: the end of its lease (it counts as in flight until settled or then); else null. */
  leasedUntil: Date | null
  deliveredAt: Date | null
  failedAt: Date | null
  /** The receiver's last HTTP status; null when no answer came. */
  lastStatus: number | null
  lastError: string | null
  lastLatencyMs: number | null
}

/** How one attempt ended. */
export type WebhookOutcome =
  | { outcome: 'delivered'; at: Date; status: number; latencyMs: number }
  | {
      outcome: 'retry' | 'failed'
      at: Date
      status: number | null
      error: string
      latencyMs: number | null
      nextAttemptAt: Date | null
    }

/**
 * The tenant whose fair share a delivery to `webhook` counts against: the seller for its own endpoints; for a task's
 * endpoint, the network of the client that added it (anyone holding the task id may, its seller included), else the
 * buyer's network (the task's clientKey), else the task itself when the host named no client. Endpoints a seller adds
 * to its buyers' tasks spend its own network's share, never the buyer's.
 */
export function webhookTenant(
  webhook: Pick<WebhookRecord, 'agentKey' | 'taskId' | 'addedBy'>,
  task: { id: string; clientKey: string },
): string {
  if (webhook.taskId === null) return `seller:${webhook.agentKey}`
  if (webhook.addedBy) return `client:${webhook.addedBy}`
  return task.clientKey ? `buyer:${task.clientKey}` : `task:${task.id}`
}

/** Body of POST …/webhooks: where to send, and which events (default: all). */
export const WebhookInput = strictFields({
  url: v.pipe(
    v.string('must be a URL'),
    v.maxLength(MAX_WEBHOOK_URL_LENGTH, `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`),
    v.url('must be an absolute http:// or https:// URL'),
    v.check((text) => /^https?:\/\//i.test(text), 'must be an http:// or https:// URL'),
  ),
  events: v.optional(
    v.pipe(
      v.array(
        v.picklist(WEBHOOK_EVENT_TYPES, `must be one of ${WEBHOOK_EVENT_TYPES.join(', ')}`),
        'must be an array of event types',
      ),
      v.minLength(1, 'must name at least one event type'),
    ),
  ),
})
/** Validated endpoint body. */
export type WebhookInput = v.InferOutput<typeof WebhookInput>

/** How an operator testing on one machine lets endpoints be local, said where a local one is refused. */
const LOCAL_HINT =
  '; send a public https URL, or, on a market you run for local testing, allow private addresses (the server: WEBHOOK_ALLOW_PRIVATE=on; embedded: config webhookAllowPrivate)'

/**
 * Why a URL may not be an endpoint (null: it may): credentials in it, or, unless private addresses are allowed, a
 * host that is `localhost` or an IP literal outside public unicast. Names are checked again when each delivery
 * resolves them (a name may point anywhere).
 */
export function webhookUrlProblem(url: string, allowPrivate: boolean): string | null {
  const parsed = new URL(url)
  if (parsed.username || parsed.password) return 'must not carry a user name or password'
  if (allowPrivate) return null
  // A trailing dot names the same host (`localhost.`).
  const host = withoutTrailing(parsed.hostname.toLowerCase(), '.')
  if (host === 'localhost' || host.endsWith('.localhost'))
    return `must not point at this machine (localhost)${LOCAL_HINT}`
  if (isAddressLiteral(host) && !isPublicAddress(host))
    return `must not point at a private, loopback, link-local or reserved address${LOCAL_HINT}`
  return null
}

/** An endpoint as its owner sees it, with its latest deliveries. */
export type WebhookView = {
  id: string
  url: string
  events: WebhookEventType[]
  task_id: string | null
  created_at: string
  /** Deliveries dropped because the endpoint's backlog was full (WEBHOOK_BACKLOG_MAX). */
  dropped_deliveries: number
  deliveries: WebhookDeliveryView[]
}

/** A delivery with its attempts. */
export type WebhookDeliveryView = {
  id: string
  event_id: string
  type: WebhookEventType
  status: 'pending' | 'delivered' | 'failed'
  attempts: number
  next_attempt_at: string | null
  delivered_at: string | null
  last_status: number | null
  last_error: string | null
  last_latency_ms: number | null
  created_at: string
}

/** The view of a delivery. */
export function toDeliveryView(delivery: WebhookDelivery): WebhookDeliveryView {
  const status = delivery.deliveredAt ? 'delivered' : delivery.failedAt ? 'failed' : 'pending'
  return {
    id: delivery.id,
    event_id: delivery.eventId,
    type: delivery.type,
    status,
    attempts: delivery.attempts,
    next_attempt_at: status === 'pending' ? delivery.nextAttemptAt.toISOString() : null,
    delivered_at: delivery.deliveredAt?.toISOString() ?? null,
    last_status: delivery.lastStatus,
    last_error: delivery.lastError,
    last_latency_ms: delivery.lastLatencyMs,
    created_at: delivery.createdAt.toISOString(),
  }
}

/** The view of an endpoint and its latest deliveries. */
export function toWebhookView(webhook: WebhookRecord, deliveries: WebhookDelivery[]): WebhookView {
  return {
    id: webhook.id,
    url: webhook.url,
    events: webhook.events,
    task_id: webhook.taskId,
    created_at: webhook.createdAt.toISOString(),
    dropped_deliveries: webhook.droppedDeliveries,
    deliveries: deliveries.map(toDeliveryView),
  }
}

const encoder = new TextEncoder()

/**
 * The signing secret of endpoint `id`: `whsec_` and the base64 of HMAC-SHA256(`masterKey`, id). Derived, never
 * stored, so the database holds no endpoint's secret; shown to its owner once, when the endpoint is made.
 */
export async function webhookSecret(masterKey: string, id: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    'raw',
    encoder.encode(masterKey),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  )
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, encoder.encode(`webhook:${id}`)))
  return `whsec_${btoa(String.fromCharCode(...mac))}`
}

/**
 * The Standard Webhooks headers of one attempt: webhook-id (the delivery's, the same on retries, so a receiver drops
 * repeats), webhook-timestamp (Unix seconds of this attempt) and webhook-signature (`v1,` and the base64
 * HMAC-SHA256 of `id.timestamp.body` under the endpoint's secret), signed with the standardwebhooks library.
 */
export function webhookHeaders(
  secret: string,
  id: string,
  at: Date,
  payload: string,
): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000)
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': new Webhook(secret).sign(id, new Date(timestamp * 1000), payload),
    'user-agent': 'agentmarket-webhooks',
  }
}

/** When a delivery that failed its `attempts`-th attempt at `at` is tried again; null: given up. */
export function nextWebhookAttempt(attempts: number, at: Date): Date | null {
  const wait = WEBHOOK_RETRY_DELAYS_MS[attempts - 1]
  return wait === undefined ? null : new Date(at.getTime() + wait)
}
