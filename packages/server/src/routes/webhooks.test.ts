import { afterEach, describe, expect, test } from 'bun:test'
import { Webhook } from 'standardwebhooks'
import { expectProblemShape, testApp } from '../testing/http.ts'
import { fetchWebhookTransport } from '../webhooks/transport.ts'

/** A receiver on 127.0.0.1 answering `status()` to each POST, keeping what it got. */
function receiver(status: () => number = () => 204) {
  const got: { headers: Headers; body: string; path: string }[] = []
  const server: ReturnType<typeof Bun.serve> = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request): Promise<Response> {
      got.push({ headers: request.headers, body: await request.text(), path: new URL(request.url).pathname })
      const code = status()
      return code >= 300 && code < 400
        ? new Response(null, {
            status: code,
            headers: { location: `http://127.0.0.1:${server.port}/elsewhere` },
          })
        : new Response(null, { status: code })
    },
  })
  stops.push(() => server.stop(true))
  return { got, url: `http://127.0.0.1:${server.port}/hook` }
}
const stops: (() => void)[] = []
afterEach(() => {
  for (const stop of stops.splice(0)) stop()
})

/** A market whose endpoints may be local (WEBHOOK_ALLOW_PRIVATE), with a seller of a free and a paid skill. */
async function market(allowPrivate = true) {
  // Now, not a fixed date: receivers check webhook-timestamp against their own clock (5 minutes).
  const app = await testApp(new Date().toISOString(), { webhookAllowPrivate: allowPrivate })
  const seller = await app.register('seller', {
    skills: [
      { name: 'Ping', type: 'free' },
      { name: 'Essay', type: 'free', review_seconds: 600 },
    ],
  })
  const transport = fetchWebhookTransport({ allowPrivate })
  /** One pass of the server's loop: fan out, then send what is due. */
  const pass = async () => {
    await app.market.fanOutWebhooks()
    return app.market.deliverWebhooks(transport)
  }
  const order = async (skill = 'ping') =>
    (await app.call('POST', '/api/agents/seller/tasks', { body: { skill } })).json.task_id as string
  const complete = (id: string) =>
    app.call('POST', `/api/agents/seller/tasks/${id}/complete`, {
      key: seller.key,
      body: { result_url: 'https://results.example/r' },
    })
  const addSellerHook = (body: unknown) =>
    app.call('POST', '/api/agents/seller/webhooks', { key: seller.key, body })
  return { ...app, seller, pass, order, complete, addSellerHook, transport }
}

describe('webhooks', () => {
  test('behavior: a seller and a buyer register endpoints; task events arrive signed in the Standard Webhooks format', async () => {
    const { addSellerHook, order, complete, pass, call } = await market()
    const sellerSide = receiver()
    const buyerSide = receiver()
    const added = await addSellerHook({ url: sellerSide.url })
    expect(added.status).toBe(201)
    expect(added.json).toMatchObject({
      url: sellerSide.url,
      events: ['task.paid', 'task.delivered', 'task.completed', 'task.expired', 'task.refunded'],
      task_id: null,
      deliveries: [],
    })
    expect(added.json.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    const id = await order()
    const forTask = await call('POST', `/api/agents/seller/tasks/${id}/webhooks`, {
      body: { url: buyerSide.url, events: ['task.completed'] },
    })
    expect(forTask.status).toBe(201)
    expect((await complete(id)).status).toBe(200)
    expect(await pass()).toEqual({ delivered: 2, retrying: 0, failed: 0 })
    // The seller's endpoint got the completion (the free order was paid when created, before it existed).
    expect(sellerSide.got.map((got) => JSON.parse(got.body).type)).toEqual(['task.completed'])
    const [delivery] = buyerSide.got
    if (!delivery) throw new Error('nothing delivered')
    const headers = Object.fromEntries(delivery.headers.entries())
    // The receiver's own check, with the Standard Webhooks library and the secret it was given.
    const payload = new Webhook(forTask.json.secret).verify(delivery.body, headers)
    expect(payload).toMatchObject({
      type: 'task.completed',
      data: { task: { task_id: id, status: 'completed', result_url: 'https://results.example/r' } },
    })
    expect(headers['webhook-id']).toMatch(/^msg_/)
    // Another endpoint's secret does not verify it.
    expect(() => new Webhook(added.json.secret).verify(delivery.body, headers)).toThrow()
    // Listing never shows a secret again; it shows the delivery and its attempt.
    const listed = await call('GET', `/api/agents/seller/tasks/${id}/webhooks`, { key: forTask.json.secret })
    expect(JSON.stringify(listed.json)).not.toContain('whsec_')
    expect(listed.json.webhooks[0].deliveries[0]).toMatchObject({
      type: 'task.completed',
      status: 'delivered',
      attempts: 1,
      last_status: 204,
    })
    // Nothing new: nothing sent twice.
    expect(await pass()).toEqual({ delivered: 0, retrying: 0, failed: 0 })
  })

  test('behavior: a receiver that fails is retried with back-off under the same webhook-id until it recovers', async () => {
    const { addSellerHook, order, complete, pass, call, clock, seller } = await market()
    let failing = true
    const side = receiver(() => (failing ? 503 : 200))
    await addSellerHook({ url: side.url, events: ['task.completed'] })
    await complete(await order())
    expect(await pass()).toEqual({ delivered: 0, retrying: 1, failed: 0 })
    // Not due before its back-off (5 s).
    clock.advance(4_000)
    expect(await pass()).toEqual({ delivered: 0, retrying: 0, failed: 0 })
    clock.advance(1_000)
    expect(await pass()).toEqual({ delivered: 0, retrying: 1, failed: 0 })
    failing = false
    clock.advance(30_000)
    expect(await pass()).toEqual({ delivered: 1, retrying: 0, failed: 0 })
    const ids = side.got.map((got) => got.headers.get('webhook-id'))
    expect(ids).toHaveLength(3)
    expect(new Set(ids).size).toBe(1)
    const timestamps = side.got.map((got) => Number(got.headers.get('webhook-timestamp')))
    expect(timestamps[2]).toBeGreaterThan(timestamps[0] ?? Infinity)
    const [listed] = (await call('GET', '/api/agents/seller/webhooks', { key: seller.key })).json.webhooks
    expect(listed.deliveries[0]).toMatchObject({
      status: 'delivered',
      attempts: 3,
      last_status: 200,
      last_error: null,
    })
    expect(listed.deliveries[0].last_latency_ms).toBeGreaterThanOrEqual(0)
  })

  test('behavior: a delivery is given up after its last retry; a deleted endpoint gets nothing more', async () => {
    const { addSellerHook, order, complete, pass, call, clock, seller } = await market()
    const side = receiver(() => 500)
    const added = await addSellerHook({ url: side.url, events: ['task.completed'] })
    await complete(await order())
    let report = await pass()
    for (let round = 0; round < 8; round++) {
      clock.advance(5 * 3_600_000)
      report = await pass()
    }
    expect(report).toEqual({ delivered: 0, retrying: 0, failed: 1 })
    expect(side.got).toHaveLength(9)
    const [listed] = (await call('GET', '/api/agents/seller/webhooks', { key: seller.key })).json.webhooks
    expect(listed.deliveries[0]).toMatchObject({ status: 'failed', attempts: 9, next_attempt_at: null })
    const removed = await call('DELETE', `/api/agents/seller/webhooks/${added.json.id}`, { key: seller.key })
    expect(removed.json).toEqual({ deleted: true })
    await complete(await order())
    await pass()
    expect(side.got).toHaveLength(9)
  })

  test('attack: endpoints on private, loopback, link-local or reserved addresses are refused unless the operator allows them', async () => {
    const { addSellerHook } = await market(false)
    for (const url of [
      'http://127.0.0.1/hook',
      'http://localhost:8080/hook',
      'http://api.localhost/hook',
      'http://[::1]/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://10.0.0.1/',
      'http://192.168.1.10/',
      'http://100.64.0.1/',
      'http://0.0.0.0/',
      'http://2130706433/',
      'http://0x7f.1/',
      'http://[fe80::1]/',
      'http://[fd00::1]/',
    ]) {
      const refused = await addSellerHook({ url })
      expectProblemShape(refused, 400, 'invalid_body')
      expect(refused.json.errors[0].pointer, url).toBe('/url')
      // A developer testing on one machine is told how to allow it.
      expect(refused.json.errors[0].detail, url).toContain('WEBHOOK_ALLOW_PRIVATE=on')
    }
    for (const url of [
      'ftp://example.com/',
      'file:///etc/passwd',
      'https://user:pass@example.com/',
      'not a url',
    ])
      expectProblemShape(await addSellerHook({ url }), 400, 'invalid_body')
    expect((await addSellerHook({ url: 'https://hooks.example.com/in' })).status).toBe(201)
  })

  test('attack: at send time a name resolving to a private address is refused, and a redirect is not followed', async () => {
    const side = receiver()
    const rebinding = fetchWebhookTransport({
      allowPrivate: false,
      resolve: async () => ['93.184.216.34', '127.0.0.1'],
    })
    await expect(rebinding.post('http://rebind.example/hook', {}, '{}')).rejects.toThrow(/refused/)
    const mapped = fetchWebhookTransport({ allowPrivate: false, resolve: async () => ['::ffff:10.0.0.7'] })
    await expect(mapped.post('http://mapped.example/hook', {}, '{}')).rejects.toThrow(/refused/)
    // The refusal never says which private address the name has.
    await expect(rebinding.post('http://rebind.example/hook', {}, '{}')).rejects.not.toThrow(/127\.0\.0\.1/)
    const allowed = fetchWebhookTransport({ allowPrivate: true })
    const redirecting = receiver(() => 307)
    expect((await allowed.post(redirecting.url, {}, '{}')).status).toBe(307)
    expect(redirecting.got.map((got) => got.path)).toEqual(['/hook'])
    // Plain HTTP goes to the address checked, the name in Host.
    const named = fetchWebhookTransport({ allowPrivate: true, resolve: async () => ['127.0.0.1'] })
    const port = new URL(side.url).port
    expect((await named.post(`http://receiver.test:${port}/hook`, {}, '{}')).status).toBe(204)
    expect(side.got[0]?.headers.get('host')).toBe(`receiver.test:${port}`)
  })

  test("attack: only the seller's key manages its endpoints; a task's endpoints need its id; limits hold", async () => {
    const { addSellerHook, call, register, order, seller } = await market()
    const other = await register('other')
    expectProblemShape(
      await call('POST', '/api/agents/seller/webhooks', {
        key: other.key,
        body: { url: 'https://a.example/' },
      }),
      403,
    )
    expectProblemShape(await call('GET', '/api/agents/seller/webhooks'), 401)
    const missing = await call(
      'POST',
      '/api/agents/seller/tasks/task_00000000000000000000000000000000/webhooks',
      {
        body: { url: 'https://a.example/' },
      },
    )
    expectProblemShape(missing, 404, 'task_not_found')
    for (let index = 0; index < 10; index++)
      expect((await addSellerHook({ url: `https://a.example/${index}` })).status).toBe(201)
    expectProblemShape(await addSellerHook({ url: 'https://a.example/11' }), 409, 'too_many_webhooks')
    const id = await order()
    const taskHook = await call('POST', `/api/agents/seller/tasks/${id}/webhooks`, {
      body: { url: 'https://b.example/' },
    })
    // A task's endpoint is not the seller's to delete by its own path, nor another task's.
    expectProblemShape(
      await call('DELETE', `/api/agents/seller/webhooks/${taskHook.json.id}`, { key: seller.key }),
      404,
      'webhook_not_found',
    )
    const otherTask = await order()
    expectProblemShape(
      await call('DELETE', `/api/agents/seller/tasks/${otherTask}/webhooks/${taskHook.json.id}`, {
        key: taskHook.json.secret,
      }),
      404,
      'webhook_not_found',
    )
    expect(
      (
        await call('DELETE', `/api/agents/seller/tasks/${id}/webhooks/${taskHook.json.id}`, {
          key: taskHook.json.secret,
        })
      ).json,
    ).toEqual({ deleted: true })
    expectProblemShape(await addSellerHook({ url: 'https://a.example/', events: ['task.rated'] }), 400)
  })
})
