import type { AgentStore, FeedStore, KvStore, TaskStore, WebhookStore } from '../../ports/Store.ts'
import type { ActionContext } from '../context.ts'
import { webhookEndpointActions, webhookMasterKey } from './endpoints.ts'
import { webhookOutboxActions } from './outbox.ts'

export type { NewWebhook } from './endpoints.ts'
export type { FanOutReport, WebhookDeliveryReport, WebhookPassOptions } from './outbox.ts'

/** Webhooks: endpoints of sellers and buyers, and the outbox that delivers task events to them (docs/webhooks.md). */
export function webhookActions(
  context: ActionContext<AgentStore & FeedStore & TaskStore & WebhookStore & KvStore>,
) {
  const masterKey = webhookMasterKey(context)
  return { ...webhookEndpointActions(context, masterKey), ...webhookOutboxActions(context, masterKey) }
}
