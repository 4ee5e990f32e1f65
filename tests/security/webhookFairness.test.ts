import { afterEach, describe, expect, test } from 'bun:test'
import net from 'node:net'
import { WEBHOOK_FAIR_SHARE, type WebhookTransport } from '@agentmarket/core'
import { testApp } from '../../packages/server/src/testing/http.ts'
import { startWebhookDelivery, WEBHOOK_IN_FLIGHT } from '../../packages/server/src/webhooks/delivery.ts'
import { fetchWebhookTransport } from '../../packages/server/src/webhooks/transport.ts'

// Issue 37, finding 4: one client starved every seller's webhooks. Free self-orders and 10 endpoints that accept TCP
// and never answer filled the process's delivery slots, and oldest-first claiming put every other seller's delivery
// behind the attacker's backlog. Here a hostile seller keeps events coming to ten real tarpits (TCP listeners that
// accept and never answer) while an honest seller completes one order; passes are run one at a time on the app's
// manual clock, and the assertions count claims per pass, never elapsed time.

const stops: (() => void)[] = []
afterEach(() => {
  for (const stop of stops.splice(0)) stop()
})

/** A TCP listener on 127.0.0.1 that accepts every connection and never writes a byte. */
async function tarpit(): Promise<{ port: number; open: () => number }> {
  const sockets = new Set<net.Socket>()
  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
  })
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening))
  stops.push(() => {
    for (const socket of sockets) socket.destroy()
    server.close()
  })
  return { port: (server.address() as net.AddressInfo).port, open: () => sockets.size }
}

/** A receiver on 127.0.0.1 that answers 204 and keeps each body it got. */
function bodyReceiver() {
  const got: string[] = []
  const receiver = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: async (request) => {
      got.push(await request.text())
      return new Response(null, { status: 204 })
    },
  })
  stops.push(() => receiver.stop(true))
  return { got, receiver }
}

/** A free order to `seller` and its completion (a task.completed for each of its endpoints). */
async function orderAndCompleteOn(app: Awaited<ReturnType<typeof testApp>>, seller: string, key: string) {
  const order = await app.call('POST', `/api/agents/${seller}/tasks`, { body: { skill: 'ping' } })
  expect(order.status).toBe(201)
  const done = await app.call('POST', `/api/agents/${seller}/tasks/${order.json.task_id}/complete`, {
    key,
    body: { result_url: 'https://results.example/r' },
  })
  expect(done.status).toBe(200)
}

describe('webhooks: fair shares', () => {
  test('attack: a seller with ten hanging endpoints and sustained events never puts another seller’s delivery behind its own', async () => {
    // Should happen: the honest delivery is claimed in the first pass after it is queued, while every attempt of the
    // attacker still hangs, and the attacker never holds more than its share in flight. Before: the 20 oldest due
    // deliveries were claimed each pass, all the attacker's, so the honest one waited for the whole backlog.
    const app = await testApp(new Date().toISOString(), { webhookAllowPrivate: true })
    const hostile = await app.register('hostile', { skills: [{ name: 'Ping', type: 'free' }] })
    const honest = await app.register('honest', { skills: [{ name: 'Ping', type: 'free' }] })
    const { got, receiver } = bodyReceiver()
    const pits = await Promise.all(Array.from({ length: 10 }, tarpit))
    for (const pit of pits) {
      const added = await app.call('POST', '/api/agents/hostile/webhooks', {
        key: hostile.key,
        body: { url: `http://127.0.0.1:${pit.port}/hook` },
      })
      expect(added.status).toBe(201)
    }
    const honestHook = await app.call('POST', '/api/agents/honest/webhooks', {
      key: honest.key,
      body: { url: `http://127.0.0.1:${receiver.port}/hook`, events: ['task.completed'] },
    })
    expect(honestHook.status).toBe(201)

    const orderAndComplete = (seller: string, key: string) => orderAndCompleteOn(app, seller, key)
    // Which seller each attempt went to, pass by pass, and how many attempts have ended.
    const claims: string[][] = []
    let settled = 0
    const real = fetchWebhookTransport({ allowPrivate: true, timeoutMs: 600_000 })
    const passes: Promise<unknown>[] = []
    /** One delivery pass, not awaited (the attacker's attempts hang); answers the sellers it sent to. */
    const pass = async (): Promise<string[]> => {
      const sent: string[] = []
      const transport: WebhookTransport = {
        post: (url, headers, body) => {
          sent.push(url.includes(`:${receiver.port}/`) ? 'honest' : 'hostile')
          return real.post(url, headers, body).finally(() => {
            settled += 1
          })
        },
      }
      let claimed = 0
      const running = app.market.deliverWebhooks(transport, { onClaimed: (count) => (claimed = count) })
      passes.push(running)
      // The pass has claimed and started every attempt once it reports its count and each has been posted.
      while (sent.length < claimed || claimed === 0) {
        if (claimed === 0 && (await Promise.race([running.then(() => true), Bun.sleep(1).then(() => false)])))
          break
        await Bun.sleep(1)
      }
      claims.push(sent)
      return sent
    }

    // Sustained events: 15 self-orders completed, 150 deliveries to the tarpits, fanned out before the honest one.
    for (let round = 0; round < 15; round++) await orderAndComplete('hostile', hostile.key)
    expect(await app.market.fanOutWebhooks()).toMatchObject({ queued: 150 })
    await pass()
    app.clock.advance(1_000)
    for (let round = 0; round < 5; round++) await orderAndComplete('hostile', hostile.key)
    await orderAndComplete('honest', honest.key)
    for (let round = 0; round < 5; round++) await orderAndComplete('hostile', hostile.key)
    await app.market.fanOutWebhooks()
    app.clock.advance(1_000)
    const next = await pass()
    expect(next, 'the honest delivery was claimed in the first pass after it was queued').toContain('honest')
    // More passes while the attacker's attempts hang: it gets nothing beyond its share.
    for (let round = 0; round < 3; round++) {
      app.clock.advance(1_000)
      await pass()
    }
    const hostileInFlight = claims.flat().filter((seller) => seller === 'hostile').length
    expect(hostileInFlight).toBeLessThanOrEqual(WEBHOOK_FAIR_SHARE.perTenant)
    // The honest receiver got it while every attempt to the tarpits was still open (none had ended).
    while (got.length === 0) await Bun.sleep(5)
    expect(JSON.parse(got[0] ?? '{}').data.task.agent).toBe('honest')
    expect(settled).toBeLessThanOrEqual(1)
    expect(pits.reduce((open, pit) => open + pit.open(), 0)).toBe(hostileInFlight)
    for (const stop of stops.splice(0)) stop()
    await Promise.all(passes)
  })

  test('attack: ten sellers of one client, ten hanging endpoints each, fill the shared slots; the reserve still sends another seller’s event at once', async () => {
    // An independent attack: 10 agents registered from one address, each with 10 endpoints that never answer, held
    // all 100 of the process's delivery slots (10 per seller), so another seller's delivery waited a whole attempt
    // timeout. The server's own delivery loop runs here; the verdict is whether the honest event arrives while every
    // hanging attempt is still open (before the reserve it never did: the test waited out its bound), never how long
    // anything took.
    const app = await testApp(new Date().toISOString(), { webhookAllowPrivate: true })
    const honest = await app.register('honest', { skills: [{ name: 'Ping', type: 'free' }] })
    const { got, receiver } = bodyReceiver()
    const pit = await tarpit()
    const orderAndComplete = (seller: string, key: string) => orderAndCompleteOn(app, seller, key)
    for (let seller = 0; seller < 10; seller++) {
      const name = `hostile-${seller}`
      const hostile = await app.register(name, { skills: [{ name: 'Ping', type: 'free' }] })
      for (let hook = 0; hook < 10; hook++) {
        const added = await app.call('POST', `/api/agents/${name}/webhooks`, {
          key: hostile.key,
          body: { url: `http://127.0.0.1:${pit.port}/${name}/${hook}` },
        })
        expect(added.status).toBe(201)
      }
      for (let round = 0; round < 2; round++) await orderAndComplete(name, hostile.key)
    }
    const honestHook = await app.call('POST', '/api/agents/honest/webhooks', {
      key: honest.key,
      body: { url: `http://127.0.0.1:${receiver.port}/hook`, events: ['task.completed'] },
    })
    expect(honestHook.status).toBe(201)
    const delivery = startWebhookDelivery(
      app.market,
      fetchWebhookTransport({ allowPrivate: true, timeoutMs: 600_000 }),
      { intervalMs: 5 },
    )
    const shared = WEBHOOK_IN_FLIGHT.max - WEBHOOK_IN_FLIGHT.reserve
    try {
      while (pit.open() < shared) await Bun.sleep(5)
      await orderAndComplete('honest', honest.key)
      while (got.length === 0) await Bun.sleep(5)
      expect(JSON.parse(got[0] ?? '{}').data.task.agent).toBe('honest')
      // Every hanging attempt is still open, and the hostile sellers took none of the reserve.
      expect(pit.open()).toBe(shared)
    } finally {
      for (const stop of stops.splice(0)) stop()
      await delivery.stop()
    }
  }, 300_000)

  test('attack: a seller adding tarpit endpoints to its buyers’ tasks spends its own share, never the buyer’s', async () => {
    // Found by the independent attack: anyone holding a task id may add endpoints to it, the seller holds every one of
    // its tasks' ids, and a task's endpoints were charged to the buyer's network: a seller's 60 tarpits on one buyer's
    // orders held that buyer's share, so the buyer's own endpoint on an order with another seller waited behind them.
    // The client each request comes from is given as the host gives it (the route's client()).
    const app = await testApp(new Date().toISOString(), { webhookAllowPrivate: true })
    const market = app.market
    const mean = await app.register('mean', { skills: [{ name: 'Ping', type: 'free' }] })
    const other = await app.register('other', { skills: [{ name: 'Ping', type: 'free' }] })
    const buyer = { client: '198.51.100.7' }
    const seller = { client: '203.0.113.9' }
    const got: string[] = []
    const receiver = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: async (request) => {
        got.push(new URL(request.url).pathname)
        return new Response(null, { status: 204 })
      },
    })
    stops.push(() => receiver.stop(true))
    const pit = await tarpit()
    const ping = { skill: 'ping' }
    const complete = (agent: string, key: string, id: string) =>
      market.completeTask(agent, id, key, { result_url: 'https://results.example/r' })
    for (let index = 0; index < 12; index++) {
      const task = (await market.createTask('mean', ping, buyer)).body as { task_id: string }
      for (let hook = 0; hook < 5; hook++)
        await market.addTaskWebhook(
          'mean',
          task.task_id,
          { url: `http://127.0.0.1:${pit.port}/t${hook}` },
          seller,
        )
      await complete('mean', mean.key, task.task_id)
    }
    const own = (await market.createTask('other', ping, buyer)).body as { task_id: string }
    const added = await market.addTaskWebhook(
      'other',
      own.task_id,
      { url: `http://127.0.0.1:${receiver.port}/buyer` },
      buyer,
    )
    expect(added.id).toStartWith('whk_')
    await complete('other', other.key, own.task_id)
    app.clock.advance(1_000)
    expect(await market.fanOutWebhooks()).toMatchObject({ queued: 61 })
    app.clock.advance(1_000)
    const sent: string[] = []
    const real = fetchWebhookTransport({ allowPrivate: true, timeoutMs: 600_000 })
    let claimed = 0
    const running = market.deliverWebhooks(
      {
        post: (url, headers, body) => {
          sent.push(new URL(url).pathname)
          return real.post(url, headers, body)
        },
      },
      { onClaimed: (count) => (claimed = count) },
    )
    while (claimed === 0 || sent.length < claimed) await Bun.sleep(1)
    expect(sent, "the buyer's own delivery is in the first pass").toContain('/buyer')
    expect(sent.filter((path) => path !== '/buyer').length).toBeLessThanOrEqual(WEBHOOK_FAIR_SHARE.perTenant)
    while (got.length === 0) await Bun.sleep(5)
    expect(got).toEqual(['/buyer'])
    for (const stop of stops.splice(0)) stop()
    await running
  })
})
