import { describe, expect, test } from 'bun:test'
import { defaultConfig, Marketplace, memoryStore, type Store } from '@agentmarket/core'
import { RESPONSE_SCHEMAS } from '@agentmarket/core/routes'
import * as v from 'valibot'
import { createApp } from '../app.ts'
import { TEST_BASE_URL } from '../testing/http.ts'
import { ENDPOINTS, type HealthProbes, type ProbeTimer } from './discovery.ts'

/** A timer the test fires by hand: the timeouts asked for, and each one's fire. */
function manualTimer() {
  const started: { ms: number; fire: () => void }[] = []
  const timer: ProbeTimer = {
    start(ms, fire) {
      started.push({ ms, fire })
      return () => {}
    },
  }
  return { timer, started }
}

/** An app over a memory store whose ping does what `ping` says, with these health probes. */
function appWith(ping: Store['ping'], probes: Partial<HealthProbes> = {}) {
  const store = { ...memoryStore(), ping }
  const market = Marketplace.create({ store, config: defaultConfig(TEST_BASE_URL) })
  const app = createApp({ market, baseUrl: TEST_BASE_URL, healthProbes: { timeoutMs: 1_000, ...probes } })
  return async (path: string) => {
    const response = await app.handle(new Request(`http://localhost${path}`))
    return { status: response.status, json: (await response.json()) as Record<string, unknown> }
  }
}

/** A ping that never answers, as a database behind a dropped network or a pool that never frees. */
const hanging = () => new Promise<void>(() => {})

describe('health for balancers', () => {
  test('behavior: /api/health/live and /api/health/ready answer 200 with their shapes and are listed in the index', async () => {
    const get = appWith(async () => {})
    const live = await get('/api/health/live')
    expect(live.status).toBe(200)
    expect(v.is(RESPONSE_SCHEMAS.Liveness, live.json)).toBe(true)
    const ready = await get('/api/v1/health/ready')
    expect(ready).toMatchObject({
      status: 200,
      json: { status: 'ready', database: 'ok', chain: 'unchecked' },
    })
    expect(v.is(RESPONSE_SCHEMAS.Readiness, ready.json)).toBe(true)
    for (const path of ['/api/health/live', '/api/health/ready'])
      expect(ENDPOINTS).toContainEqual({ method: 'GET', path, auth: 'none' })
  })

  test('attack: a flood of readiness probes shares one database ping at a time: 200 probes at once, one ping, every answer the same', async () => {
    let pings = 0
    let released = false
    const waiting: (() => void)[] = []
    const get = appWith(
      () => {
        pings++
        return released ? Promise.resolve() : new Promise<void>((resolve) => waiting.push(resolve))
      },
      { timer: manualTimer().timer },
    )
    const flood = Array.from({ length: 200 }, () => get('/api/health/ready'))
    while (pings === 0) await Bun.sleep(1)
    // Time for the other probes to reach the database, as each did before (200 pings, 200 timers): not a verdict.
    await Bun.sleep(100)
    expect(pings).toBe(1)
    released = true
    for (const resolve of waiting) resolve()
    const answers = await Promise.all(flood)
    expect(new Set(answers.map((each) => each.status))).toEqual(new Set([200]))
  })

  test('behavior: a database that does not answer makes readiness 503 from the probe timeout path, with the timeout the setting gave; liveness stays 200', async () => {
    const { timer, started } = manualTimer()
    const get = appWith(hanging, { timeoutMs: 1_234, timer })
    const answer = get('/api/health/ready')
    // The probe asked for the configured timeout; firing it is what answers.
    while (started.length === 0) await Bun.sleep(1)
    expect(started.map((probe) => probe.ms)).toEqual([1_234])
    for (const probe of started) probe.fire()
    expect(await answer).toMatchObject({ status: 503, json: { status: 'unready', database: 'error' } })
    expect((await get('/api/health/live')).status).toBe(200)
  })

  test('behavior: /api/community/health keeps its SPEC shape and says error, from the timeout path, when the database does not answer', async () => {
    const { timer, started } = manualTimer()
    const get = appWith(hanging, { timer })
    const answer = get('/api/community/health')
    while (started.length === 0) await Bun.sleep(1)
    for (const probe of started) probe.fire()
    const health = await answer
    expect(health).toMatchObject({ status: 503, json: { status: 'error', database: 'error' } })
    expect(v.is(RESPONSE_SCHEMAS.Health, health.json)).toBe(true)
  })

  test('behavior: a chain that does not answer shows as degraded, and the node stays ready', async () => {
    const get = appWith(async () => {}, { chain: () => Promise.reject(new Error('rpc down')) })
    expect(await get('/api/health/ready')).toMatchObject({
      status: 200,
      json: { status: 'ready', database: 'ok', chain: 'degraded' },
    })
    const up = appWith(async () => {}, { chain: async () => 123n })
    expect((await up('/api/health/ready')).json.chain).toBe('ok')
  })
})
