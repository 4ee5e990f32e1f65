import { type MarketplaceActions, WEBHOOK_FAIR_SHARE, type WebhookTransport } from '@agentmarket/core'
import { fallbackLogger, type Logger } from '../log.ts'
import { passFaults } from '../passFaults.ts'

/** The running webhook sender. */
export type WebhookDelivery = {
  /** Stops the timer and waits for the passes in progress; what is queued stays for the next start. */
  stop(): Promise<void>
}

/**
 * How many deliveries one process has in flight at most, how many of those only tenants holding none may take, and
 * how many one pass claims.
 */
export const WEBHOOK_IN_FLIGHT = { max: 100, reserve: 10, perPass: WEBHOOK_FAIR_SHARE.limit } as const

/**
 * Fans new task events out to their endpoints and sends what is due, every `intervalMs`. Fan-out runs one pass at a
 * time; delivery passes do not wait for each other (up to WEBHOOK_IN_FLIGHT.max deliveries at once) and claim by the
 * fair share (FairQueue.ts), so one tenant holds at most WEBHOOK_FAIR_SHARE.perTenant attempts in flight and is
 * claimed round-robin with every other; each slot is freed as its attempt ends, so a hanging receiver holds only its
 * own slot. The last WEBHOOK_IN_FLIGHT.reserve slots go only to tenants with nothing in flight, so sellers whose
 * receivers all hang (ten of them fill the shared slots) never keep another seller's delivery waiting. Every server process may run it: queuing is once per endpoint and event, and each delivery is leased when
 * claimed.
 * @example const webhooks = startWebhookDelivery(market, fetchWebhookTransport({ allowPrivate: false }), { intervalMs: 250 })
 */
export function startWebhookDelivery(
  market: MarketplaceActions,
  transport: WebhookTransport,
  { intervalMs, logger = fallbackLogger }: { intervalMs: number; logger?: Logger },
): WebhookDelivery {
  let fanning: Promise<void> | null = null
  const passes = new Set<Promise<void>>()
  let reserved = 0
  // A database outage is told once per pass kind (passFaults), not as an error line every pass.
  const deliveryFaults = passFaults(logger, 'webhook delivery pass')
  const fanOutFaults = passFaults(logger, 'webhook fan-out')
  /** Starts a delivery pass when there is room for one; it does not wait for the passes before it. */
  const startPass = () => {
    const free = WEBHOOK_IN_FLIGHT.max - reserved
    if (free <= 0) return
    // Past the shared slots a pass claims for idle tenants only: a share of one in flight counts what each holds.
    const reserveOnly = free <= WEBHOOK_IN_FLIGHT.reserve
    const room = Math.min(WEBHOOK_IN_FLIGHT.perPass, reserveOnly ? free : free - WEBHOOK_IN_FLIGHT.reserve)
    const share = { ...WEBHOOK_FAIR_SHARE, limit: room, ...(reserveOnly ? { perTenant: 1 } : {}) }
    // The pass holds `room` slots until it knows what it claimed, then one per attempt until that attempt ends.
    let held = room
    reserved += room
    const release = (count: number) => {
      reserved -= count
      held -= count
    }
    const pass: Promise<void> = market
      .deliverWebhooks(transport, {
        share,
        onClaimed: (count) => release(held - count),
        onSettled: () => release(1),
      })
      .then(() => deliveryFaults.succeeded())
      .catch((error) => deliveryFaults.failed(error))
      .finally(() => {
        release(held)
        passes.delete(pass)
      })
    passes.add(pass)
  }
  const tick = () => {
    // What a fan-out queued is sent at once, not a tick later.
    fanning ??= market
      .fanOutWebhooks()
      .then((report) => {
        fanOutFaults.succeeded()
        if (report.queued > 0) startPass()
      })
      .catch((error) => fanOutFaults.failed(error))
      .finally(() => {
        fanning = null
      })
    startPass()
  }
  const timer = setInterval(tick, intervalMs)
  return {
    async stop() {
      clearInterval(timer)
      await Promise.all([fanning, ...passes])
    },
  }
}
