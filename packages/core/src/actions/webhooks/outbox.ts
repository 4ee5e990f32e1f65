import { nameKey } from '../../Agent.ts'
import { generateId } from '../../Credentials.ts'
import { type FairShare, WEBHOOK_FAIR_SHARE } from '../../FairQueue.ts'
import type { FeedEventRecord } from '../../Feed.ts'
import type { KeptSecret } from '../../PersistentSecret.ts'
import type { FeedStore, KvStore, TaskStore, WebhookStore } from '../../ports/Store.ts'
import type { WebhookTransport } from '../../ports/WebhookTransport.ts'
import { toTaskView } from '../../TaskView.ts'
import {
  nextWebhookAttempt,
  WEBHOOK_BACKLOG_MAX,
  WEBHOOK_CURSOR,
  WEBHOOK_TIMEOUT_MS,
  WEBHOOK_TYPE_OF,
  type WebhookDelivery,
  type WebhookOutcome,
  webhookHeaders,
  webhookSecret,
  webhookTenant,
} from '../../Webhook.ts'
import type { ActionContext } from '../context.ts'

const LONGEST_ERROR = 300

/** What one fan-out pass did: events read, deliveries queued. */
export type FanOutReport = { events: number; queued: number }
/** What one delivery pass did. */
export type WebhookDeliveryReport = { delivered: number; retrying: number; failed: number }
/** How a host runs a delivery pass: the fair share it claims by, and what it hears as the pass goes. */
export type WebhookPassOptions = {
  /** Claimed by (default WEBHOOK_FAIR_SHARE); a host with fewer free slots lowers `limit`. */
  share?: FairShare
  /** Told how many deliveries the pass claimed, before any is sent. */
  onClaimed?: (count: number) => void
  /** Told each time one attempt has ended and been recorded: its slot is free. */
  onSettled?: () => void
}

/** Fanning feed events out to endpoints, and delivering them with retries. */
export function webhookOutboxActions(
  context: ActionContext<FeedStore & TaskStore & WebhookStore & KvStore>,
  masterKey: KeptSecret,
) {
  const { store, clock, config, random } = context

  /** The deliveries of one feed event: one per endpoint of its task that asked for its type. */
  const deliveriesOf = async (event: FeedEventRecord): Promise<WebhookDelivery[]> => {
    const type = WEBHOOK_TYPE_OF[event.kind]
    if (!type || !event.taskId) return []
    // An endpoint gets what happened after it was added, never older events still waiting to be fanned out.
    const hooks = (await store.webhooksFor(nameKey(event.agent), event.taskId)).filter(
      (hook) => hook.events.includes(type) && Number(event.id) > Number(hook.afterEventId),
    )
    if (hooks.length === 0) return []
    const task = await store.getTask(event.agent, event.taskId)
    if (!task) return []
    const payload = JSON.stringify({
      type,
      timestamp: event.at.toISOString(),
      data: { event_id: event.id, task: toTaskView(task, config) },
    })
    const now = clock.now()
    return hooks.map((hook) => ({
      id: generateId(random, 'msg_'),
      webhookId: hook.id,
      tenant: webhookTenant(hook, task),
      eventId: event.id,
      url: hook.url,
      type,
      payload,
      createdAt: now,
      attempts: 0,
      nextAttemptAt: now,
      leasedUntil: null,
      deliveredAt: null,
      failedAt: null,
      lastStatus: null,
      lastError: null,
      lastLatencyMs: null,
    }))
  }

  /** One attempt of a claimed delivery, and how it ended. */
  const attempt = async (
    transport: WebhookTransport,
    masterKey: string,
    delivery: WebhookDelivery,
  ): Promise<WebhookOutcome> => {
    const secret = await webhookSecret(masterKey, delivery.webhookId)
    const headers = webhookHeaders(secret, delivery.id, clock.now(), delivery.payload)
    const started = performance.now()
    let status: number | null = null
    let error = ''
    try {
      status = (await transport.post(delivery.url, headers, delivery.payload)).status
      if (status >= 200 && status < 300)
        return { outcome: 'delivered', at: clock.now(), status, latencyMs: performance.now() - started }
      error = `the receiver answered ${status}`
    } catch (failure) {
      error = (failure instanceof Error ? failure.message : String(failure)).slice(0, LONGEST_ERROR)
    }
    const at = clock.now()
    const nextAttemptAt = nextWebhookAttempt(delivery.attempts, at)
    const latencyMs = status === null ? null : performance.now() - started
    return { outcome: nextAttemptAt ? 'retry' : 'failed', at, status, error, latencyMs, nextAttemptAt }
  }

  return {
    /**
     * Reads the feed after the cursor (up to `limit` events) and queues a delivery of each task event to every
     * endpoint of its seller and of its task that asked for it, then moves the cursor (forward only). Queuing twice is
     * harmless (one delivery per endpoint and event), so a crash between the two, or nodes racing, lose nothing.
     */
    async fanOutWebhooks(limit = 200): Promise<FanOutReport> {
      const cursor = (await store.kvGet(WEBHOOK_CURSOR)) as string | null
      if (cursor === null) return { events: 0, queued: 0 }
      const events = await store.listEvents({ limit, after: cursor })
      if (events.length === 0) return { events: 0, queued: 0 }
      // Oldest first: listEvents answers newest first.
      const ordered = [...events].sort((a, b) => Number(a.id) - Number(b.id))
      const deliveries = (await Promise.all(ordered.map(deliveriesOf))).flat()
      await store.enqueueDeliveries(deliveries, WEBHOOK_BACKLOG_MAX)
      const last = ordered.at(-1)?.id ?? cursor
      await store.kvUpdate(WEBHOOK_CURSOR, (current) =>
        Number(current ?? 0) >= Number(last)
          ? { op: 'noop', result: null }
          : { op: 'set', value: last, result: null },
      )
      return { events: ordered.length, queued: deliveries.length }
    },

    /**
     * One pass over the webhook outbox: claims due deliveries by the fair share (FairQueue.ts: per tenant and per
     * endpoint quotas of attempts in flight, round-robin across tenants) and sends them at once, each signed in the
     * Standard Webhooks format under its endpoint's secret. A 2xx delivers; anything else (another status, a refused
     * address, a timeout) is retried after WEBHOOK_RETRY_DELAYS_MS and given up after the last; a crash mid-pass
     * leaves each claimed delivery to be tried again once its lease ends.
     */
    async deliverWebhooks(
      transport: WebhookTransport,
      options: WebhookPassOptions = {},
    ): Promise<WebhookDeliveryReport> {
      const { share = WEBHOOK_FAIR_SHARE, onClaimed, onSettled } = options
      const now = clock.now()
      const leaseUntil = new Date(now.getTime() + 2 * WEBHOOK_TIMEOUT_MS)
      const due = share.limit > 0 ? await store.claimDueDeliveries(now, leaseUntil, share) : []
      onClaimed?.(due.length)
      const report: WebhookDeliveryReport = { delivered: 0, retrying: 0, failed: 0 }
      if (due.length === 0) return report
      const key = await masterKey.made()
      await Promise.all(
        due.map(async (delivery) => {
          try {
            const outcome = await attempt(transport, key, delivery)
            await store.settleDelivery(delivery.id, outcome)
            report[outcome.outcome === 'retry' ? 'retrying' : outcome.outcome] += 1
          } finally {
            onSettled?.()
          }
        }),
      )
      return report
    },
  }
}
