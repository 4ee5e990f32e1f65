import { afterEach, describe, expect, jest, test } from 'bun:test'
import type { WebhookTransport } from '@agentmarket/core'
import { startPaymentRechecks } from '../packages/server/src/rechecks.ts'
import { testApp } from '../packages/server/src/testing/http.ts'
import {
  startWebhookDelivery,
  WEBHOOK_IDLE_MAX_MS,
  type WebhookDelivery,
} from '../packages/server/src/webhooks/delivery.ts'
import { sellerWithEndpoint } from './support/sellerWithEndpoint.ts'

// Issue 41: a market at rest polled its store four times a second for webhooks (a fan-out and a delivery claim each
// time), most of its CPU at rest. Now an idle webhook pass backs off (idlePacer) and an in-process event wakes it;
// payment re-checks keep their plain one-second interval (a due re-check must not wait for a back-off). Time here is
// Bun's fake timers moved in small steps, with the app's manual clock moved alongside; the assertions count passes
// and sends, never elapsed time.

const BUSY_MS = 250
const STEP_MS = 50

type App = Awaited<ReturnType<typeof testApp>>
let delivery: WebhookDelivery | undefined
let rechecks: { stop(): Promise<void> } | undefined
let simulatedMs = 0
afterEach(async () => {
  jest.useRealTimers()
  await delivery?.stop()
  await rechecks?.stop()
  delivery = undefined
  rechecks = undefined
})

/** Passes started and not yet finished (the counted market methods below): a step waits for them, not for a time. */
let running = 0

/** `work`, counted in `running` while it runs. */
async function tracked<T>(work: () => Promise<T>): Promise<T> {
  running++
  try {
    return await work()
  } finally {
    running--
  }
}

/**
 * Lets the passes started by the timers finish their store calls, signing and sends: event-loop turns (never timers)
 * until none is running, and a few more for what each one's end starts. A condition, not a count of turns: on a busy
 * machine a pass takes more turns (seen: a send missing after 30 turns in a full CI run).
 */
async function settle() {
  const turn = () => new Promise<void>((resolve) => setImmediate(resolve))
  for (let quiet = 0; quiet < 10; quiet = running === 0 ? quiet + 1 : 0) await turn()
}

/** Moves the fake timers and the app's clock `ms` on, in steps, settling the passes after each step. */
async function simulate(app: App, ms: number) {
  for (let elapsed = 0; elapsed < ms; elapsed += STEP_MS) {
    app.clock.advance(STEP_MS)
    simulatedMs += STEP_MS
    jest.advanceTimersByTime(STEP_MS)
    await settle()
  }
}

/** The app's market with its webhook passes counted, and a transport that records each send. */
function counted(app: App, answer: () => number) {
  const calls = { fanOut: 0, deliver: 0 }
  const sent: string[] = []
  const market = {
    ...app.market,
    fanOutWebhooks: () => {
      calls.fanOut += 1
      return tracked(() => app.market.fanOutWebhooks())
    },
    deliverWebhooks: (...args: Parameters<App['market']['deliverWebhooks']>) => {
      calls.deliver += 1
      return tracked(() => app.market.deliverWebhooks(...args))
    },
  }
  const transport: WebhookTransport = {
    post: async (_url, _headers, body) => {
      sent.push(body)
      return { status: answer() }
    },
  }
  return { calls, sent, market, transport }
}

/**
 * A sender started at the busy pace on fake timers, over a seller with an endpoint, woken by each event the app
 * writes; `answer` gives the endpoint's status for each send, `idleMaxMs` the sender's idle cap (its default if not).
 */
async function wokenSender(answer: () => number, idleMaxMs?: number) {
  const app = await testApp(new Date().toISOString(), {
    webhookAllowPrivate: true,
    onEventsWritten: () => delivery?.wake(),
  })
  const order = await sellerWithEndpoint(app)
  const { sent, market, transport } = counted(app, answer)
  jest.useFakeTimers()
  delivery = startWebhookDelivery(market, transport, { intervalMs: BUSY_MS, idleMaxMs })
  return { app, order, sent }
}

describe('webhook sender at rest', () => {
  test('with nothing queued it polls the store at most once per WEBHOOK_IDLE_MAX_MS, not every 250 ms', async () => {
    const app = await testApp(new Date().toISOString(), { webhookAllowPrivate: true })
    await sellerWithEndpoint(app)
    const { calls, market, transport } = counted(app, () => 204)
    jest.useFakeTimers()
    delivery = startWebhookDelivery(market, transport, { intervalMs: BUSY_MS })
    await simulate(app, 60_000)
    // Before: 240 fan-outs and 240 delivery claims in 60 s. Now the back-off (250, 500, 1000 ms, then the cap).
    expect(calls.fanOut).toBeLessThanOrEqual(60_000 / WEBHOOK_IDLE_MAX_MS + 4)
    expect(calls.deliver).toBeLessThanOrEqual(60_000 / WEBHOOK_IDLE_MAX_MS + 4)
    expect(calls.fanOut).toBeGreaterThan(0)
  })

  test('an event this process writes is sent at the busy pace, after a long rest', async () => {
    const { app, order, sent } = await wokenSender(() => 204)
    await simulate(app, 60_000)
    await order()
    // Woken by the write: the fan-out runs within one busy interval and sends what it queued at once.
    await simulate(app, BUSY_MS)
    expect(sent.length).toBe(1)
    expect(JSON.parse(sent[0] ?? '{}').type).toBe('task.completed')
  })

  test('the wake comes from the write itself: with an hour-long idle cap the event is still sent at once', async () => {
    const { app, order, sent } = await wokenSender(() => 204, 3_600_000)
    await simulate(app, 120_000)
    await order()
    await simulate(app, BUSY_MS)
    expect(sent.length).toBe(1)
  })

  test('a retry that falls due while idle is sent within WEBHOOK_IDLE_MAX_MS of its time', async () => {
    const statuses = [500, 204]
    const { app, order, sent } = await wokenSender(() => statuses.shift() ?? 204)
    await order()
    await simulate(app, BUSY_MS)
    expect(sent.length).toBe(1)
    // The first retry is due 5 s later (WEBHOOK_RETRY_DELAYS_MS); the sender has backed off meanwhile.
    await simulate(app, 5_000 + WEBHOOK_IDLE_MAX_MS)
    expect(sent.length).toBe(2)
  })
})

describe('payment re-checks at rest', () => {
  /** The app's market with the re-check pass and the expiry sweep counted (the simulated time of each sweep kept). */
  function countedRechecks(app: App) {
    const calls = { recheck: 0, sweeps: [] as number[] }
    const market = {
      ...app.market,
      recheckPendingPayments: (...args: Parameters<App['market']['recheckPendingPayments']>) => {
        calls.recheck += 1
        return tracked(() => app.market.recheckPendingPayments(...args))
      },
      expireUnpaidTasks: (...args: Parameters<App['market']['expireUnpaidTasks']>) => {
        calls.sweeps.push(simulatedMs)
        return tracked(() => app.market.expireUnpaidTasks(...args))
      },
    }
    return { calls, market }
  }

  test('with nothing due it still claims every interval (no back-off), and sweeps expiry within 10 s', async () => {
    const app = await testApp(new Date().toISOString())
    const { calls, market } = countedRechecks(app)
    jest.useFakeTimers()
    simulatedMs = 0
    rechecks = startPaymentRechecks(market, { intervalMs: 1_000 })
    await simulate(app, 60_000)
    // A pending payment's re-check is due 5 s after its order whether or not the last pass found work: one a second.
    expect(calls.recheck).toBeGreaterThanOrEqual(59)
    expect(calls.recheck).toBeLessThanOrEqual(60)
    const gaps = calls.sweeps.map((at, index) => at - (calls.sweeps[index - 1] ?? 0))
    expect(calls.sweeps.length).toBeGreaterThanOrEqual(6)
    expect(Math.max(...gaps)).toBeLessThanOrEqual(10_000)
  })
})
