import { type MarketplaceActions, WEBHOOK_FAIR_SHARE, type WebhookTransport } from '@agentmarket/core'
import { idlePacer } from '../idlePacer.ts'
import { fallbackLogger, type Logger } from '../log.ts'
import { passFaults } from '../passFaults.ts'

/** The running webhook sender. */
export type WebhookDelivery = {
  /** Polls at the busy pace again (the next pass within `intervalMs`): this process just wrote events. */
  wake(): void
  /** Stops the timer and waits for the passes in progress; what is queued stays for the next start. */
  stop(): Promise<void>
}

/**
 * The longest wait between passes while nothing is queued or due: each idle pass doubles the wait from `intervalMs`
 * up to this, any work or `wake()` brings it back. It bounds how late an event another process wrote, or a retry
 * that fell due, is picked up at rest (the feed's own fallback poll, FEED_FALLBACK_POLL_MS, is the same).
 */
export const WEBHOOK_IDLE_MAX_MS = 2_000

/**
 * How many deliveries one process has in flight at most, how many of those only tenants holding none may take, and
 * how many one pass claims.
 */
export const WEBHOOK_IN_FLIGHT = { max: 100, reserve: 10, perPass: WEBHOOK_FAIR_SHARE.limit } as const

/**
 * Fans new task events out to their endpoints and sends what is due, every `intervalMs` while there is work, backing
 * off to `idleMaxMs` at rest (idlePacer) and back to `intervalMs` on `wake()`. Fan-out runs one pass at a
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
  {
    intervalMs,
    idleMaxMs = WEBHOOK_IDLE_MAX_MS,
    logger = fallbackLogger,
  }: { intervalMs: number; idleMaxMs?: number; logger?: Logger },
): WebhookDelivery {
  let fanning: Promise<void> | null = null
  const passes = new Set<Promise<void>>()
  let reserved = 0
  // A database outage is told once per pass kind (passFaults), not as an error line every pass.
  const deliveryFaults = passFaults(logger, 'webhook delivery pass')
  const fanOutFaults = passFaults(logger, 'webhook fan-out')
  /**
   * Starts a delivery pass when there is room for one; it does not wait for the passes before it. Resolves to how
   * many deliveries it claimed (a full process counts as busy), as soon as it knows.
   */
  const startPass = (): Promise<number> => {
    const free = WEBHOOK_IN_FLIGHT.max - reserved
    if (free <= 0) return Promise.resolve(1)
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
    let claimed: (count: number) => void = () => {}
    const known = new Promise<number>((resolve) => {
      claimed = resolve
    })
    const pass: Promise<void> = market
      .deliverWebhooks(transport, {
        share,
        onClaimed: (count) => {
          release(held - count)
          claimed(count)
        },
        onSettled: () => release(1),
      })
      .then(() => deliveryFaults.succeeded())
      .catch((error) => deliveryFaults.failed(error))
      .finally(() => {
        // A pass that failed before claiming counts as work: the database is retried at the busy pace.
        claimed(1)
        release(held)
        passes.delete(pass)
      })
    passes.add(pass)
    return known
  }
  /** One tick: a fan-out (one at a time) and a delivery pass; resolves to whether either found work. */
  const tick = async (): Promise<boolean> => {
    // What a fan-out queued is sent at once, not a tick later.
    const fanned: Promise<number> =
      fanning === null
        ? market
            .fanOutWebhooks()
            .then(async (report) => {
              fanOutFaults.succeeded()
              return report.queued > 0 ? report.queued + (await startPass()) : 0
            })
            .catch((error) => {
              fanOutFaults.failed(error)
              return 1
            })
        : Promise.resolve(1)
    fanning ??= fanned.then(() => {
      fanning = null
    })
    const [queued, claimed] = await Promise.all([fanned, startPass()])
    return queued + claimed > 0
  }
  const pacer = idlePacer(tick, { busyMs: intervalMs, idleMaxMs })
  return {
    wake: pacer.wake,
    async stop() {
      pacer.stop()
      await Promise.all([fanning, ...passes])
    },
  }
}
