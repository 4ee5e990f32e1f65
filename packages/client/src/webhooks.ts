import { Webhook } from 'standardwebhooks'
import type { Task, WebhookEventType } from './types.ts'

/** A webhook delivery's body: the event's type and time, and the task as its buyer reads it. */
export type WebhookEvent = {
  type: WebhookEventType
  timestamp: string
  data: { event_id: string; task: Task }
}

/**
 * Checks a webhook delivery's Standard Webhooks signature (`webhook-id`, `webhook-timestamp` within 5 minutes,
 * `webhook-signature`) under the endpoint's `whsec_…` secret and answers its event; throws when it does not verify.
 * `body` is the raw text received, exactly as sent. Drop repeats by `webhook-id`.
 */
export function verifyWebhook(
  secret: string,
  headers: Headers | Record<string, string>,
  body: string,
): WebhookEvent {
  const plain = headers instanceof Headers ? Object.fromEntries(headers.entries()) : headers
  return new Webhook(secret).verify(body, plain) as WebhookEvent
}
