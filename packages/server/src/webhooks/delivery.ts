import type { MarketplaceActions, WebhookTransport } from '@agentmarket/core'
import { fallbackLogger, type Logger } from '../log.ts'

/** The running webhook sender. */
export type WebhookDelivery = {
  /** Stops the timer and waits for a pass in progress; what is queued stays for the next start. */
  stop(): Promise<void>
}

/**
 * Fans new task events out to their endpoints and sends what is due, every `intervalMs`, one pass at a time. Every
 * server process may run it: queuing is once per endpoint and event, and each delivery is leased when claimed.
 * @example const webhooks = startWebhookDelivery(market, fetchWebhookTransport({ allowPrivate: false }), { intervalMs: 250 })
 */
export function startWebhookDelivery(
  market: MarketplaceActions,
  transport: WebhookTransport,
  { intervalMs, logger = fallbackLogger }: { intervalMs: number; logger?: Logger },
): WebhookDelivery {
  let running: Promise<void> | null = null
  const pass = async () => {
    try {
      await market.fanOutWebhooks()
      await market.deliverWebhooks(transport)
    } catch (error) {
      logger.error('webhook pass failed', {}, error)
    }
  }
  const timer = setInterval(() => {
    running ??= pass().finally(() => {
      running = null
    })
  }, intervalMs)
  return {
    async stop() {
      clearInterval(timer)
      await running
    },
  }
}
