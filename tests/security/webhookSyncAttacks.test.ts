import { afterEach, describe, expect, setSystemTime, test } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { Webhook } from 'standardwebhooks'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { jsonLogger } from '../../packages/server/src/log.ts'
import { expectProblemShape, type TestAppOptions, testApp } from '../../packages/server/src/testing/http.ts'
import { syncPass } from '../../packages/server/src/testing/sync.ts'
import { startWebhookDelivery } from '../../packages/server/src/webhooks/delivery.ts'
import { fetchWebhookTransport } from '../../packages/server/src/webhooks/transport.ts'
import { until } from '../support/until.ts'
import { recordingFacilitator } from '../support/x402.ts'

// Attacks on webhooks (endpoints, the outbox, the transport's SSRF rules, signatures) and on sync (the agent list's
// cursor and tombstones, the listing lifecycle, the feed's cursor and its updated_since search). Each test drives the
// in-process app (a libSQL :memory: store, a manual clock) and asserts the safe outcome: a test that fails is an
// attack that works. Receivers are Bun servers on 127.0.0.1, allowed by webhookAllowPrivate where a test needs one.

// biome-ignore lint/suspicious/noExplicitAny: tests read many JSON shapes and assert on them
type Json = any

const WALLET = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
const BUYER_EMAIL = 'victim.buyer@example.com'
const MPP = {
  secretKey: 'webhook-sync-attack-secret-of-at-least-32-bytes',
  realm: 'localhost',
  currency: '0x20C000000000000000000000b9537d11c60E8b50',
  getClient: () => {
    throw new Error('no payment is made here')
  },
} as const

const stops: (() => void)[] = []
afterEach(() => {
  for (const stop of stops.splice(0)) stop()
})

type Received = { headers: Record<string, string>; body: string; path: string; at: number }

/** A receiver on 127.0.0.1 answering `status()` to each POST (or never, for `hang`), keeping what it got. */
function receiver(status: () => number | 'hang' = () => 204) {
  const got: Received[] = []
  let server: ReturnType<typeof Bun.serve> | null = null
  server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    idleTimeout: 0,
    async fetch(request): Promise<Response> {
      got.push({
        headers: Object.fromEntries(request.headers.entries()),
        body: await request.text(),
        path: new URL(request.url).pathname,
        at: performance.now(),
      })
      const code = status()
      if (code === 'hang') return new Promise<Response>(() => {})
      return new Response(null, { status: code })
    },
  })
  const stop = () => server?.stop(true)
  stops.push(stop)
  /** Closes the receiver and every connection it holds (a hanging one ends its attempt at once). */
  return { got, url: `http://127.0.0.1:${server.port}/hook`, port: server.port, stop }
}

/** A market whose seller and rival each sell a free skill; endpoints may be local unless `allowPrivate` is false. */
async function market(allowPrivate = true, options: TestAppOptions = {}) {
  // Now, not a fixed date: receivers check webhook-timestamp against their own clock.
  const app = await testApp(new Date().toISOString(), { webhookAllowPrivate: allowPrivate, ...options })
  const seller = await app.register('seller', { skills: [{ name: 'Ping', type: 'free' }] })
  const rival = await app.register('rival', { skills: [{ name: 'Ping', type: 'free' }] })
  const keys: Record<string, string> = { seller: seller.key, rival: rival.key }
  const transport = fetchWebhookTransport({ allowPrivate })
  /** One pass of the server's loop: fan out, then send what is due. */
  const pass = async () => {
    await app.market.fanOutWebhooks()
    return app.market.deliverWebhooks(transport)
  }
  const order = async (agent = 'seller', body: Record<string, unknown> = { skill: 'ping' }) => {
    const answer = await app.call('POST', `/api/agents/${agent}/tasks`, { body })
    if (answer.status !== 201) throw new Error(`order: ${answer.status} ${answer.text}`)
    return answer.json.task_id as string
  }
  const complete = (id: string, agent = 'seller') =>
    app.call('POST', `/api/agents/${agent}/tasks/${id}/complete`, {
      key: keys[agent],
      body: { result_url: 'https://results.example/r' },
    })
  const addHook = (agent: string, body: unknown, key = keys[agent]) =>
    app.call('POST', `/api/agents/${agent}/webhooks`, { key, body })
  const addTaskHook = (agent: string, id: string, body: unknown) =>
    app.call('POST', `/api/agents/${agent}/tasks/${id}/webhooks`, { body })
  return { ...app, seller, rival, keys, transport, pass, order, complete, addHook, addTaskHook }
}

/** The JSON bodies a receiver got. */
const bodies = (side: { got: Received[] }): Json[] => side.got.map((got) => JSON.parse(got.body))

/** The message a transport's attempt failed with ('' when it did not fail). */
async function failure(work: Promise<unknown>): Promise<string> {
  return work.then(
    () => '',
    (error: unknown) => (error instanceof Error ? error.message : String(error)),
  )
}

describe('webhooks: SSRF when an endpoint is added', () => {
  test('attack: encoded IPv4 forms, IDN and full-width spellings, and embedded-IPv4 IPv6 forms of private targets are refused', async () => {
    // Should happen: every one of these normalizes (WHATWG URL, IDNA) to a loopback, link-local, metadata or other
    // non-public address, or embeds one (mapped, translated, NAT64, 6to4, Teredo): 400 invalid_body naming /url.
    const { addHook } = await market(false)
    for (const url of [
      'http://0177.0.0.1/hook',
      'http://017700000001/',
      'http://0x7f.0.0.1/',
      'http://0x7f000001/',
      'http://127.0.0.1./',
      'http://127.1/',
      'http://0/',
      'http://127。0。0。1/',
      'http://①②⑦.0.0.1/',
      'http://ｌｏｃａｌｈｏｓｔ/',
      'http://localhoſt/',
      'http://LOCALHOST:8080/',
      'http://%6c%6fcalhost/',
      'http://169.254.169.254./latest/meta-data/',
      'http://[0:0:0:0:0:ffff:7f00:1]/',
      'http://[::ffff:a9fe:a9fe]/',
      'http://[::ffff:0:a9fe:a9fe]/',
      'http://[64:ff9b::a9fe:a9fe]/',
      'http://[64:ff9b:1::a00:1]/',
      'http://[2002:a9fe:a9fe::1]/',
      'http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/',
      'http://[fc00::1]/',
      'http://[fec0::1]/',
      'http://[ff02::1]/',
      'http://[fd00:ec2::254]/',
      'http://100.100.100.200/',
      'http://192.0.0.192/',
      'http://198.18.0.1/',
      'https://user:pass@hooks.example.com/',
      'https://token@hooks.example.com/',
    ]) {
      const refused = await addHook('seller', { url })
      expectProblemShape(refused, 400, 'invalid_body')
      expect(refused.json.errors[0].pointer, url).toBe('/url')
      // The refusal does not echo the URL back (it may carry a token).
      expect(refused.text).not.toContain('pass@')
    }
    expect((await addHook('seller', { url: 'https://hooks.example.com/in' })).status).toBe(201)
  })

  test('attack: a trailing dot (localhost., api.localhost.) does not get a localhost name past the check when it is added', async () => {
    // Should happen: `localhost.` is the same name as `localhost` (fully qualified); docs/webhooks.md says
    // "localhost names ... are refused (400 naming /url)" when an endpoint is added. The check compares the hostname
    // with 'localhost' and '.localhost' without dropping the trailing dot, so these are stored. (At send time the
    // name is resolved and refused, see below: the bypass is of the add-time check only.)
    const { addHook } = await market(false)
    const accepted: string[] = []
    for (const url of ['http://localhost./hook', 'http://api.localhost./hook', 'http://LocalHost.:8080/'])
      if ((await addHook('seller', { url })).status !== 400) accepted.push(url)
    expect(accepted).toEqual([])
  })

  test('attack: IPv4-compatible IPv6 literals ([::127.0.0.1], [::169.254.169.254]) are refused when added and at send time', async () => {
    // Should happen: ::/96 (IPv4-compatible, deprecated by RFC 4291) embeds an IPv4 address exactly as the mapped
    // form does, and all of ::/8 is IETF-reserved, not global unicast. The URL parser turns [::127.0.0.1] into
    // [::7f00:1], which ipaddr.js ranges as 'unicast', so isPublicAddress says public. (On this Linux box a connect
    // to it fails, EHOSTUNREACH; stacks that still route IPv4-compatible addresses would reach the embedded target.)
    const { addHook } = await market(false)
    const accepted: string[] = []
    for (const url of [
      'http://[::127.0.0.1]/hook',
      'http://[::a9fe:a9fe]/latest/meta-data/',
      'http://[::a00:1]/',
    ])
      if ((await addHook('seller', { url })).status !== 400) accepted.push(url)
    // At send time a name resolving to ::a9fe:a9fe is connected to ("the connection failed" or "no answer within"
    // here, where nothing routes it), not refused.
    const compatible = fetchWebhookTransport({
      allowPrivate: false,
      resolve: async () => ['::a9fe:a9fe'],
      timeoutMs: 500,
    })
    const sent = await failure(compatible.post('http://metadata.example/hook', {}, '{}'))
    expect({ accepted, sent }).toEqual({ accepted: [], sent: expect.stringMatching(/refused/) })
  })
})

describe('webhooks: SSRF at send time', () => {
  test('attack: a name resolving to any private form, or to one private address among public ones, never reaches a local receiver', async () => {
    // Should happen: every attempt is refused before a connection, whatever the spelling of the address the name
    // resolves to; the local receiver gets nothing.
    const side = receiver()
    for (const answer of [
      ['127.0.0.1'],
      ['0.0.0.0'],
      ['::'],
      ['::1'],
      ['169.254.169.254'],
      ['fe80::1%eth0'],
      ['::ffff:127.0.0.1'],
      ['::ffff:7f00:1'],
      ['::ffff:0:7f00:1'],
      ['64:ff9b::7f00:1'],
      ['2002:7f00:1::1'],
      ['100.64.0.1'],
      ['198.18.0.1'],
      ['fd00:ec2::254'],
      ['93.184.216.34', '127.0.0.1'],
      ['2606:4700:4700::1111', '::1'],
      ['not-an-address'],
      ['127.0.0.1 '],
    ]) {
      const transport = fetchWebhookTransport({ allowPrivate: false, resolve: async () => answer })
      const message = await failure(transport.post(`http://rebind.example:${side.port}/hook`, {}, '{}'))
      expect(message, answer.join(',')).toMatch(/refused|did not resolve/)
      for (const address of answer) expect(message).not.toContain(address.trim())
    }
    // Literal hosts (no resolution at all), and names the system resolves to loopback.
    const plain = fetchWebhookTransport({ allowPrivate: false })
    for (const url of [
      `http://127.0.0.1:${side.port}/hook`,
      `http://[::ffff:127.0.0.1]:${side.port}/hook`,
      `http://[::1]:${side.port}/hook`,
      `http://localhost:${side.port}/hook`,
      `http://localhost.:${side.port}/hook`,
      `http://0x7f000001:${side.port}/hook`,
    ])
      expect(await failure(plain.post(url, {}, '{}')), url).toMatch(/refused|did not resolve/)
    expect(side.got).toHaveLength(0)
  })

  test('attack: last_error does not tell an internal name that resolves (privately) from one that does not exist', async () => {
    // Should happen: SECURITY.md promises "no probing of internal DNS through last_error". A seller who adds
    // http://db.corp.internal/ and http://nothing.corp.internal/ must not learn from the two errors which internal
    // name exists. Today one says "refused: the host is or resolves to a private ... address", the other "the host
    // did not resolve": an existence oracle for the operator's internal DNS.
    const internal = fetchWebhookTransport({ allowPrivate: false, resolve: async () => ['10.20.30.40'] })
    const missing = fetchWebhookTransport({
      allowPrivate: false,
      resolve: async () => {
        throw new Error('getaddrinfo ENOTFOUND')
      },
    })
    const exists = await failure(internal.post('http://db.corp.internal/hook', {}, '{}'))
    const absent = await failure(missing.post('http://nothing.corp.internal/hook', {}, '{}'))
    expect(exists).not.toBe('')
    expect(exists).toBe(absent)
  })

  test('attack: a receiver that never answers, trickles its headers, or streams an endless or huge body ends the attempt in time', async () => {
    // Should happen: an attempt whose answer's head never comes (or never ends) is given up at the first-byte
    // deadline (here 400 ms); the endless and the huge bodies are not read (the status alone decides). The verdicts
    // are outcomes, not durations: a head that never comes cannot be a 200 however slow the machine is, and the two
    // that answer are given a deadline no loaded machine misses.
    const hanging = receiver(() => 'hang')
    const endless = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      idleTimeout: 0,
      fetch: () =>
        new Response(
          new ReadableStream({
            async pull(controller) {
              await Bun.sleep(20)
              controller.enqueue(new Uint8Array(4096))
            },
          }),
        ),
    })
    // A head announcing 64 MiB, then as much of the body as the client reads: a client that read it all would take
    // the whole 64 MiB; this one must stop at the head.
    let hugeSent = 0
    const chunk = new Uint8Array(1024 * 1024)
    const huge = Bun.listen({
      hostname: '127.0.0.1',
      port: 0,
      socket: {
        data(socket) {
          if (hugeSent > 0) return
          socket.write('HTTP/1.1 200 OK\r\ncontent-length: 67108864\r\n\r\n')
          hugeSent = 1
          socket.write(chunk)
        },
        drain(socket) {
          if (hugeSent < 64) hugeSent += socket.write(chunk) > 0 ? 1 : 0
        },
      },
    })
    const timers: ReturnType<typeof setInterval>[] = []
    const trickle = Bun.listen({
      hostname: '127.0.0.1',
      port: 0,
      socket: {
        open(socket) {
          socket.write('HTTP/1.1 200 OK\r\n')
          timers.push(setInterval(() => socket.write('x-slow: y\r\n'), 50))
        },
        data() {},
      },
    })
    stops.push(() => {
      endless.stop(true)
      huge.stop(true)
      trickle.stop(true)
      for (const timer of timers) clearInterval(timer)
    })
    const quick = fetchWebhookTransport({ allowPrivate: true, timeoutMs: 400 })
    const patient = fetchWebhookTransport({ allowPrivate: true, timeoutMs: 10_000 })
    const outcome = (transport: typeof quick, url: string) =>
      transport.post(url, {}, '{}').then(
        (answer) => `status ${answer.status}`,
        (error: Error) => error.message,
      )
    expect(await outcome(quick, hanging.url)).toBe('no answer within 400 ms')
    expect(await outcome(quick, `http://127.0.0.1:${trickle.port}/hook`)).toBe('no answer within 400 ms')
    expect(await outcome(patient, `http://127.0.0.1:${endless.port}/hook`)).toBe('status 200')
    expect(await outcome(patient, `http://127.0.0.1:${huge.port}/hook`)).toBe('status 200')
    // The attempt ended at the head: far less than the announced body left the receiver.
    expect(hugeSent).toBeLessThan(64)
  })

  test('attack: one seller’s hanging receivers do not hold up another seller’s deliveries', async () => {
    // Should happen: an honest seller's event reaches its receiver about as fast as the loop runs (250 ms in
    // production), whatever another seller's endpoints do. Today a pass claims the 20 oldest due deliveries and
    // awaits them all (Promise.all) before the next pass may start, so 10 endpoints of an attacker on a tarpit,
    // with 2 completions each, hold every delivery of the marketplace for a full timeout (10 s in production; 1 s
    // here), and an attacker who keeps 20 deliveries due per pass (free orders to itself, completed) starves
    // everyone: throughput falls to 20 deliveries per timeout, and the tarpit's own retries join the queue.
    const app = await market()
    const tarpit = receiver(() => 'hang')
    const honest = receiver()
    for (let index = 0; index < 10; index++)
      expect((await app.addHook('rival', { url: `${tarpit.url}/${index}` })).status).toBe(201)
    expect((await app.addHook('seller', { url: honest.url })).status).toBe(201)
    // The attacker's 20 deliveries are queued first (two completions of free orders to itself, to 10 endpoints).
    for (let index = 0; index < 2; index++) await app.complete(await app.order('rival'), 'rival')
    expect(await app.market.fanOutWebhooks()).toMatchObject({ queued: 20 })
    app.clock.advance(1_000)
    await app.complete(await app.order('seller'))
    const loop = startWebhookDelivery(
      app.market,
      // The tarpit's attempts end only after a minute: an honest delivery that had to wait for any of them to give
      // up a slot cannot arrive within the wait below, however fast the machine.
      fetchWebhookTransport({ allowPrivate: true, timeoutMs: 60_000 }),
      { intervalMs: 20 },
    )
    try {
      await until(() => honest.got.length > 0, 'the honest delivery received', { timeoutMs: 20_000 })
    } finally {
      // The tarpit's connections close, so its attempts end and the loop stops without waiting out their minute.
      await tarpit.stop()
      await loop.stop()
    }
    expect(honest.got.length).toBeGreaterThan(0)
  })
})

describe('webhooks: whose events, whose endpoints', () => {
  test('attack: another seller’s key, a buyer with another task’s id, or no key cannot list, add to or delete endpoints', async () => {
    // Should happen: 401/403 on the seller path without its key; 404 webhook_not_found for an endpoint that is not
    // the caller's (a rival's, a task's by the seller path, another task's); nothing is deleted; each list shows only
    // its owner's endpoints (a seller never sees the URLs of its buyers' endpoints, nor they the seller's).
    const app = await market()
    const { call, addHook, addTaskHook, order, keys } = app
    const sellerHook = (await addHook('seller', { url: 'https://seller.example/in' })).json
    const rivalHook = (await addHook('rival', { url: 'https://rival.example/in' })).json
    const taskA = await order()
    const taskB = await order()
    const hookA = (await addTaskHook('seller', taskA, { url: 'https://buyer-a.example/secret-token' })).json
    const hookB = (await addTaskHook('seller', taskB, { url: 'https://buyer-b.example/secret-token' })).json
    expectProblemShape(await call('GET', '/api/agents/seller/webhooks', { key: keys.rival }), 403)
    expectProblemShape(await call('GET', '/api/agents/seller/webhooks', { key: 'am_live_forged' }), 401)
    expectProblemShape(
      await call('DELETE', `/api/agents/seller/webhooks/${sellerHook.id}`, { key: keys.rival }),
      403,
    )
    // The rival's own path with the seller's endpoint id.
    expectProblemShape(
      await call('DELETE', `/api/agents/rival/webhooks/${sellerHook.id}`, { key: keys.rival }),
      404,
      'webhook_not_found',
    )
    // A buyer of task A deletes task B's endpoint, or the seller's, through task A: its own secret is no key to them
    // (401), and theirs, sent through task A, name no endpoint of task A (404).
    for (const hook of [hookB, sellerHook, rivalHook]) {
      const path = `/api/agents/seller/tasks/${taskA}/webhooks/${hook.id}`
      expectProblemShape(await call('DELETE', path, { key: hookA.secret }), 401)
      expectProblemShape(await call('DELETE', path, { key: hook.secret }), 404, 'webhook_not_found')
    }
    // Task A's id used on another agent's path is no task there.
    expectProblemShape(await call('GET', `/api/agents/rival/tasks/${taskA}/webhooks`), 404, 'task_not_found')
    expectProblemShape(
      await addTaskHook('rival', taskA, { url: 'https://spy.example/in' }),
      404,
      'task_not_found',
    )
    const sellerList = (await call('GET', '/api/agents/seller/webhooks', { key: keys.seller })).json
    expect(sellerList.webhooks.map((hook: Json) => hook.id)).toEqual([sellerHook.id])
    expect(JSON.stringify(sellerList)).not.toContain('buyer-a.example')
    const listA = (await call('GET', `/api/agents/seller/tasks/${taskA}/webhooks`, { key: hookA.secret }))
      .json
    expect(listA.webhooks.map((hook: Json) => hook.id)).toEqual([hookA.id])
    expect(JSON.stringify(listA)).not.toContain('seller.example')
    expect(JSON.stringify(listA)).not.toContain('buyer-b.example')
    // Everything is still there.
    expect(
      (await call('GET', `/api/agents/seller/tasks/${taskB}/webhooks`, { key: hookB.secret })).json.webhooks,
    ).toHaveLength(1)
    expect((await call('GET', '/api/agents/rival/webhooks', { key: keys.rival })).json.webhooks).toHaveLength(
      1,
    )
  })

  test('attack: a seller’s endpoint gets only its own tasks’ events, a task’s endpoint only that task’s', async () => {
    // Should happen: the rival's completions never reach the seller's receiver; task B's never reach task A's.
    const app = await market()
    const sellerSide = receiver()
    const rivalSide = receiver()
    const taskSide = receiver()
    await app.addHook('seller', { url: sellerSide.url })
    await app.addHook('rival', { url: rivalSide.url })
    const taskA = await app.order()
    const taskB = await app.order()
    const rivalTask = await app.order('rival')
    await app.addTaskHook('seller', taskA, { url: taskSide.url })
    await app.complete(taskB)
    await app.complete(rivalTask, 'rival')
    await app.complete(taskA)
    await app.pass()
    const idsOf = (side: { got: Received[] }) => new Set(bodies(side).map((body) => body.data.task.task_id))
    expect([...idsOf(sellerSide)].sort()).toEqual([taskA, taskB].sort())
    expect([...idsOf(rivalSide)]).toEqual([rivalTask])
    expect([...idsOf(taskSide)]).toEqual([taskA])
  })

  test('attack: the payload is the task as its buyer reads it: no buyer e-mail, no keys, no secret', async () => {
    // Should happen: the webhook body's task has no field GET …/tasks/{id} lacks, and nothing secret (the buyer's
    // e-mail, which the public and the buyer-side views leave out; API keys; whsec_ secrets; the master key).
    const app = await market()
    const side = receiver()
    const hook = (await app.addHook('seller', { url: side.url })).json
    const id = await app.order('seller', {
      skill: 'ping',
      buyer_email: BUYER_EMAIL,
      params: { note: 'hello' },
    })
    const taskHook = (await app.addTaskHook('seller', id, { url: `${side.url}/buyer` })).json
    await app.complete(id)
    await app.pass()
    const read = (await app.call('GET', `/api/agents/seller/tasks/${id}`)).json
    const masterKey = String(await app.store.kvGet('setting:webhook_key'))
    expect(side.got.length).toBeGreaterThanOrEqual(2)
    for (const got of side.got) {
      for (const secret of [
        BUYER_EMAIL,
        app.keys.seller,
        app.keys.rival,
        hook.secret,
        taskHook.secret,
        masterKey,
      ])
        expect(got.body).not.toContain(secret)
      expect(got.body).not.toContain('whsec_')
      const task = JSON.parse(got.body).data.task
      for (const field of Object.keys(task)) expect(read, field).toHaveProperty(field)
      expect(task.task_id).toBe(id)
    }
  })

  test('attack: the public feed carries no task id, so nobody subscribes to a task they did not order', async () => {
    // Should happen: task events carry a task id inside the store (for fan-out) but never on the wire: the task id is
    // the buyer's capability, and with it anyone could add an endpoint for that task's events.
    const app = await market()
    const ids = [await app.order(), await app.order('rival')]
    await app.complete(ids[0] ?? '')
    const feed = await app.call('GET', '/api/feed/live?limit=200')
    const synced = await app.call('GET', '/api/feed/live?updated_since=2000-01-01T00:00:00Z&limit=200')
    expect(feed.json.events.length).toBeGreaterThan(3)
    for (const id of ids) {
      expect(feed.text).not.toContain(id)
      expect(synced.text).not.toContain(id)
    }
  })
})

describe('webhooks: secrets and signatures', () => {
  test('attack: a secret is answered once; never listed, logged, or shown in an error', async () => {
    // Should happen: whsec_ and the master key appear only in the 201 answers; not in lists, problem answers or the
    // request and fault log (jsonLogger, as the server writes it), task ids are redacted from logged paths.
    const lines: string[] = []
    const logger = jsonLogger('info', (text) => {
      lines.push(text)
    })
    const app = await market(true, { logger })
    const failing = receiver(() => 500)
    const added = await app.addHook('seller', { url: failing.url })
    const id = await app.order()
    const taskHook = await app.addTaskHook('seller', id, { url: failing.url })
    await app.complete(id)
    await app.pass()
    const answers = [
      await app.call('GET', '/api/agents/seller/webhooks', { key: app.keys.seller }),
      await app.call('GET', `/api/agents/seller/tasks/${id}/webhooks`, { key: taskHook.json.secret }),
      await app.addHook('seller', { url: 'http://[', events: ['task.nope'] }),
      await app.call('DELETE', '/api/agents/seller/webhooks/whk_nope', { key: app.keys.seller }),
      await app.call('POST', '/api/agents/seller/webhooks', {
        key: app.keys.rival,
        body: { url: failing.url },
      }),
    ]
    logger.flush(true)
    const masterKey = String(await app.store.kvGet('setting:webhook_key'))
    expect(added.json.secret).toMatch(/^whsec_/)
    expect(taskHook.json.secret).toMatch(/^whsec_/)
    expect(taskHook.json.secret).not.toBe(added.json.secret)
    const logged = lines.join('')
    const everything = [...answers.map((answer) => answer.text), logged].join('\n')
    expect(everything).not.toContain('whsec_')
    expect(everything).not.toContain(masterKey)
    expect(everything).not.toContain(added.json.secret.slice(6))
    expect(logged).not.toContain(id)
    // A line per request was written (the check above read the real log, not an empty one).
    expect(logged.split('\n').filter((line) => line.includes('/webhooks')).length).toBeGreaterThan(3)
  })

  test('attack: a signature binds the id, the timestamp and the body; a replay outside the window or to another endpoint fails', async () => {
    // Should happen: a receiver's Standard Webhooks check refuses a changed body, a changed timestamp, another id,
    // a signature made under another endpoint's secret, and the same delivery replayed 10 minutes later; retries of a
    // delivery keep its webhook-id (so the receiver drops the repeat) but are signed afresh.
    const app = await market()
    let failing = true
    const side = receiver(() => (failing ? 503 : 204))
    const other = receiver()
    const hook = (await app.addHook('seller', { url: side.url, events: ['task.completed'] })).json
    const otherHook = (await app.addHook('seller', { url: other.url, events: ['task.completed'] })).json
    await app.complete(await app.order())
    await app.pass()
    failing = false
    app.clock.advance(5_000)
    await app.pass()
    expect(side.got).toHaveLength(2)
    const [first, retry] = side.got as [Received, Received]
    expect(first.headers['webhook-id']).toBe(retry.headers['webhook-id'])
    const verify = (secret: string, body: string, headers: Record<string, string>) =>
      new Webhook(secret).verify(body, headers)
    expect(verify(hook.secret, retry.body, retry.headers)).toMatchObject({ type: 'task.completed' })
    const tampered = retry.body.replace('"completed"', '"rejected"')
    expect(tampered).not.toBe(retry.body)
    expect(() => verify(hook.secret, tampered, retry.headers)).toThrow()
    const later = String(Number(retry.headers['webhook-timestamp']) + 1)
    expect(() => verify(hook.secret, retry.body, { ...retry.headers, 'webhook-timestamp': later })).toThrow()
    expect(() =>
      verify(hook.secret, retry.body, { ...retry.headers, 'webhook-id': 'msg_someone_else' }),
    ).toThrow()
    // The other endpoint's copy (its own id and secret) does not verify under this endpoint's secret.
    const [copy] = other.got
    if (!copy) throw new Error('the other endpoint got nothing')
    expect(verify(otherHook.secret, copy.body, copy.headers)).toMatchObject({ type: 'task.completed' })
    expect(() => verify(hook.secret, copy.body, copy.headers)).toThrow()
    // Replayed ten minutes later: outside the receiver's tolerance.
    setSystemTime(new Date(Date.now() + 10 * 60_000))
    try {
      expect(() => verify(hook.secret, retry.body, retry.headers)).toThrow()
    } finally {
      setSystemTime()
    }
  })
})

describe('webhooks: limits and the outbox under concurrency', () => {
  test('attack: 40 parallel POSTs never pass 10 endpoints per seller or 5 per task', async () => {
    // Should happen: exactly 10 (seller) and 5 (task) are created; the rest are 409 too_many_webhooks.
    const app = await market()
    const sellerAnswers = await Promise.all(
      Array.from({ length: 40 }, (_, index) => app.addHook('seller', { url: `https://a.example/${index}` })),
    )
    expect(sellerAnswers.filter((answer) => answer.status === 201)).toHaveLength(10)
    for (const answer of sellerAnswers.filter((answer) => answer.status !== 201))
      expectProblemShape(answer, 409, 'too_many_webhooks')
    const id = await app.order()
    const taskAnswers = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        app.addTaskHook('seller', id, { url: `https://b.example/${index}` }),
      ),
    )
    expect(taskAnswers.filter((answer) => answer.status === 201)).toHaveLength(5)
    const listed = await app.call('GET', '/api/agents/seller/webhooks', { key: app.keys.seller })
    expect(listed.json.webhooks).toHaveLength(10)
    // Each endpoint is listed by its own secret: five distinct endpoints.
    const listedIds = new Set<string>()
    for (const answer of taskAnswers.filter((answer) => answer.status === 201))
      for (const hook of (
        await app.call('GET', `/api/agents/seller/tasks/${id}/webhooks`, { key: answer.json.secret })
      ).json.webhooks)
        listedIds.add(hook.id)
    expect(listedIds.size).toBe(5)
  })

  test('attack: five concurrent fan-outs and three concurrent delivery passes send each event once per endpoint', async () => {
    // Should happen: one delivery per endpoint and event, whatever races: 6 completions to the seller's endpoint, and
    // each task's own endpoint its 1 completion; every webhook-id once.
    const app = await market()
    const sellerSide = receiver()
    const taskSide = receiver()
    await app.addHook('seller', { url: sellerSide.url })
    const ids: string[] = []
    for (let index = 0; index < 6; index++) {
      const id = await app.order()
      await app.addTaskHook('seller', id, { url: taskSide.url, events: ['task.completed'] })
      ids.push(id)
    }
    await Promise.all(ids.map((id) => app.complete(id)))
    await Promise.all(Array.from({ length: 5 }, () => app.market.fanOutWebhooks()))
    await Promise.all(Array.from({ length: 3 }, () => app.market.deliverWebhooks(app.transport)))
    await app.pass()
    const events = (side: { got: Received[] }) => bodies(side).map((body) => body.data.event_id)
    expect(new Set(events(sellerSide)).size).toBe(sellerSide.got.length)
    expect(new Set(events(taskSide)).size).toBe(taskSide.got.length)
    expect(taskSide.got).toHaveLength(6)
    // A free order records no task.paid (it is paid as it is made): the seller's endpoint sees the 6 completions.
    expect(sellerSide.got).toHaveLength(6)
    const ids2 = [...sellerSide.got, ...taskSide.got].map((got) => got.headers['webhook-id'])
    expect(new Set(ids2).size).toBe(ids2.length)
  })

  test('attack: an endpoint gets no event that happened before it was added', async () => {
    // Should happen: outbox.ts says "The first endpoint starts the fan-out at the feed's newest event: nothing older
    // is ever sent." An endpoint added after a task completed (here: after the seller's first endpoint already set
    // the cursor, and before the next pass ran) should not get that completion. Today it does: deliveries are made
    // for every endpoint that exists when the event is fanned out, so what a new endpoint gets depends on whether a
    // pass ran in between (250 ms) — and a buyer's task endpoint sometimes gets task.paid, sometimes not.
    const app = await market()
    const first = receiver()
    const late = receiver()
    await app.addHook('seller', { url: first.url, events: ['task.completed'] })
    await app.complete(await app.order())
    await app.addHook('seller', { url: late.url, events: ['task.completed'] })
    await app.pass()
    expect(first.got).toHaveLength(1)
    expect(late.got).toHaveLength(0)
  })

  test('attack: a burst of more events than one fan-out page (200) between passes loses none and repeats none', async () => {
    // Should happen: the fan-out reads the feed after its cursor oldest first, 200 at a time, and moves the cursor
    // to the last event it queued: 250 completions (and the orders' other events) all arrive, once each.
    const app = await market()
    const side = receiver()
    await app.addHook('seller', { url: side.url, events: ['task.completed'] })
    const ids: string[] = []
    for (let index = 0; index < 250; index++) {
      const id = await app.order()
      await app.complete(id)
      ids.push(id)
    }
    // A pass claims at most WEBHOOK_FAIR_SHARE.perEndpoint deliveries to one endpoint (the fair share).
    for (let round = 0; round < 100 && side.got.length < 250; round++) await app.pass()
    const delivered = bodies(side).map((body) => body.data.task.task_id)
    expect(delivered).toHaveLength(250)
    expect(new Set(delivered)).toEqual(new Set(ids))
  })

  test('attack: an endpoint added while private addresses were allowed is refused at send time once they are not', async () => {
    // Should happen: the operator turns WEBHOOK_ALLOW_PRIVATE off; endpoints stored while it was on (127.0.0.1)
    // are checked again at each attempt: the receiver gets nothing and the delivery says it was refused.
    const app = await market(true)
    const side = receiver()
    await app.addHook('seller', { url: side.url, events: ['task.completed'] })
    await app.complete(await app.order())
    await app.market.fanOutWebhooks()
    expect(await app.market.deliverWebhooks(fetchWebhookTransport({ allowPrivate: false }))).toMatchObject({
      retrying: 1,
    })
    expect(side.got).toHaveLength(0)
    const [listed] = (await app.call('GET', '/api/agents/seller/webhooks', { key: app.keys.seller })).json
      .webhooks
    expect(listed.deliveries[0].last_error).toMatch(/^refused/)
    expect(listed.deliveries[0].last_error).not.toContain('127.0.0.1')
  })

  test('attack: a deleted endpoint’s queued deliveries are dropped and nothing resurrects them', async () => {
    // Should happen: deleting an endpoint drops what was queued for it (even mid-retry); adding the same URL again is
    // a new endpoint with a new secret that gets only later events.
    const app = await market()
    const side = receiver(() => 500)
    const hook = (await app.addHook('seller', { url: side.url, events: ['task.completed'] })).json
    await app.complete(await app.order())
    expect(await app.pass()).toMatchObject({ retrying: 1 })
    const removed = await app.call('DELETE', `/api/agents/seller/webhooks/${hook.id}`, {
      key: app.keys.seller,
    })
    expect(removed.json).toEqual({ deleted: true })
    const again = (await app.addHook('seller', { url: side.url, events: ['task.completed'] })).json
    expect(again.secret).not.toBe(hook.secret)
    app.clock.advance(60_000)
    expect(await app.pass()).toEqual({ delivered: 0, retrying: 0, failed: 0 })
    expect(side.got).toHaveLength(1)
  })

  test('attack: huge and odd URLs: over 2048 characters refused; unicode hosts and paths kept as sent', async () => {
    // Should happen: 2048 characters are taken, 2049 are a 400 naming /url; a unicode URL is stored and listed as
    // sent; a non-http scheme or a relative URL is refused.
    const app = await market(false)
    const base = 'https://hooks.example.com/'
    const longest = base + 'a'.repeat(2048 - base.length)
    expect((await app.addHook('seller', { url: longest })).status).toBe(201)
    const tooLong = await app.addHook('seller', { url: `${longest}a` })
    expectProblemShape(tooLong, 400, 'invalid_body')
    expect(tooLong.json.errors[0].pointer).toBe('/url')
    expect(tooLong.text.length).toBeLessThan(2_000)
    const unicode = 'https://例え.テスト/パス?q=ü'
    expect((await app.addHook('seller', { url: unicode })).status).toBe(201)
    for (const url of [
      'javascript:alert(1)',
      '//hooks.example.com/',
      'data:text/plain,x',
      'ws://hooks.example.com/',
    ])
      expectProblemShape(await app.addHook('seller', { url }), 400, 'invalid_body')
    const listed = (await app.call('GET', '/api/agents/seller/webhooks', { key: app.keys.seller })).json
    // Endpoints made in one millisecond list by id (random), so compared as a set.
    expect(listed.webhooks.map((hook: Json) => hook.url).sort()).toEqual([longest, unicode].sort())
  })
})

/** The opaque sync cursor for `[after, since, began]`, as a forger would make it. */
const forgedCursor = (value: unknown) =>
  btoa(JSON.stringify(value)).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '')

describe('sync: forged cursors and mixed queries', () => {
  test('attack: a forged sync cursor with a huge began or since is a 400, not a 500', async () => {
    // Should happen: decodeSyncCursor accepts any safe integer as a time, but Dates end at 8.64e15 ms: a began past
    // that (+ the minute of overlap) makes next_updated_since an Invalid Date, whose toISOString throws RangeError:
    // a 500 internal_error (and a fault log line) for any anonymous caller. (A huge since is answered 200, empty.)
    // A cursor the server could never have made should be 400 invalid_query.
    const app = await testApp()
    await app.register('some-agent')
    const failed: string[] = []
    for (const value of [
      ['', Number.MAX_SAFE_INTEGER, 0],
      ['', 8_640_000_000_000_001, 0],
      ['', null, 8_640_000_000_060_001],
      ['', null, Number.MAX_SAFE_INTEGER],
    ]) {
      const answer = await app.call('GET', `/api/community/agents?cursor=${forgedCursor(value)}`)
      if (answer.status !== 200 && answer.status !== 400)
        failed.push(`${JSON.stringify(value)}: ${answer.status}`)
    }
    expect(failed).toEqual([])
  })

  test('attack: other forged cursors (SQL-ish, negative, fractional, objects, too long) are a 400 or only move the caller’s own pass', async () => {
    // Should happen: malformed cursors are 400 invalid_query; a well-formed one with a crafted name key pages from
    // there (parameterized, so SQL text is only a string to compare) and never shows more than a sync shows.
    const app = await testApp()
    await app.register('alpha')
    await app.register('omega')
    for (const value of [
      ['', -1, 0],
      ['', 1.5, 0],
      ['', null, -5],
      ['x'.repeat(65), null, 0],
      { after: '', since: null, began: 0 },
      [1, null, 0],
      'just a string',
      null,
    ])
      expectProblemShape(
        await app.call('GET', `/api/community/agents?cursor=${forgedCursor(value)}`),
        400,
        'invalid_query',
      )
    expectProblemShape(
      await app.call('GET', `/api/community/agents?cursor=${'A'.repeat(401)}`),
      400,
      'invalid_query',
    )
    const sqlish = await app.call(
      'GET',
      `/api/community/agents?cursor=${forgedCursor(["m' OR 1=1 --", null, 0])}`,
    )
    expect(sqlish.status).toBe(200)
    expect(sqlish.json.agents.map((agent: Json) => agent.name)).toEqual(['omega'])
  })

  test('attack: cursor or updated_since mixed with list filters, sorts or offsets is refused, never half-applied', async () => {
    // Should happen: a sync is by name over every listing (tombstones included); mixing in q, owner, type, status,
    // max_price, sort or offset would either leak tombstones into a filtered view or silently drop the filter: 400.
    const app = await testApp()
    await app.register('alpha')
    const first = (await app.call('GET', '/api/community/agents?updated_since=2000-01-01T00:00:00Z&limit=1'))
      .json
    for (const extra of [
      'q=alp',
      'owner=alice',
      'type=free',
      'status=live',
      'max_price=1',
      'sort=trust',
      'offset=5',
    ])
      for (const start of ['updated_since=2000-01-01T00:00:00Z', `cursor=${forgedCursor(['', null, 0])}`]) {
        const answer = await app.call('GET', `/api/community/agents?${start}&${extra}`)
        expectProblemShape(answer, 400, 'invalid_query')
      }
    expect(first.agents).toHaveLength(1)
  })
})

describe('sync: what a pass sees', () => {
  test('attack: paging while agents are withdrawn, re-listed, edited and registered gives each name at most once, and the next sync has every change', async () => {
    // Should happen: one pass shows every agent that existed when it began exactly once (as a summary or a
    // tombstone), no name twice; the next sync from next_updated_since shows every agent written during the pass
    // in its final state (withdrawn ones as tombstones).
    const app = await testApp()
    const keys: string[] = []
    for (let index = 0; index < 300; index++)
      keys.push((await app.register(`agent-${String(index).padStart(3, '0')}`)).key)
    const since = new Date(app.clock.now().getTime() - 60_000).toISOString()
    app.clock.advance(5_000)
    const touched = new Map<string, 'deleted' | 'active'>()
    let round = 0
    const between = async () => {
      round += 1
      for (const offset of [7, 151, 293]) {
        const target = (round * 37 + offset) % 300
        const name = `agent-${String(target).padStart(3, '0')}`
        const key = keys[target] ?? ''
        const state = touched.get(name) === 'deleted' ? 'active' : 'deleted'
        const answer =
          state === 'deleted'
            ? await app.call('DELETE', `/api/agents/${name}/listing`, { key })
            : await app.call('PUT', `/api/agents/${name}`, {
                key,
                body: { listing: 'active', bio: `back ${round}` },
              })
        expect(answer.status).toBe(200)
        touched.set(name, state)
      }
      await app.register(`late-${round}`)
      app.clock.advance(10)
    }
    const pages = await syncPass(app, since, between, 25)
    const names = pages.flatMap((page) => page.agents.map((agent: Json) => agent.name as string))
    expect(new Set(names).size).toBe(names.length)
    expect(names.filter((name) => name.startsWith('agent-'))).toHaveLength(300)
    const next = await syncPass(app, pages.at(-1).next_updated_since)
    const latest = new Map<string, Json>(
      next.flatMap((page) => page.agents.map((agent: Json) => [agent.name, agent] as const)),
    )
    for (const [name, state] of touched) {
      const seen = latest.get(name)
      expect(seen, name).toBeDefined()
      expect(seen.listing, name).toBe(state)
      if (state === 'deleted') expect(Object.keys(seen).sort()).toEqual(['listing', 'name', 'updatedAt'])
    }
  })

  test('attack: pairing an agent (its owner changing) reaches the next sync', async () => {
    // Should happen: docs/sync.md: updatedAt is "the last change of its listing, profile, skills or owner", and a
    // sync from updated_since answers "the agents changed at or after that time". Pairing sets the owner (the
    // summary's `owner`, the owner filter, trust points) but claimAgent never moves updated_at, in any store: a
    // catalog that syncs never learns the new owner (nor a later one), so its owner filter and trust ranking stay
    // wrong until some unrelated edit.
    const app = await testApp()
    const bot = await app.register('paired-bot', { bio: 'x' })
    app.clock.advance(10 * 60_000)
    const before = await syncPass(app, new Date(app.clock.now().getTime() - 60_000).toISOString())
    const since = before.at(-1).next_updated_since
    app.clock.advance(5 * 60_000)
    const wallet = privateKeyToAccount(generatePrivateKey())
    expect((await app.pair('alice', bot.pairingCode, wallet)).status).toBe(200)
    expect((await app.call('GET', '/api/community/agents/paired-bot')).json.owner).toEqual({
      username: 'alice',
    })
    const after = await syncPass(app, since)
    const synced = after.flatMap((page) => page.agents)
    expect(synced.map((agent: Json) => agent.name)).toContain('paired-bot')
    expect(synced.find((agent: Json) => agent.name === 'paired-bot')?.owner).toEqual({ username: 'alice' })
  })

  test('attack: re-registering a withdrawn name (any case) is refused: nobody inherits its tasks, endpoints or tombstone', async () => {
    // Should happen: a withdrawn listing keeps its record, so its name stays taken (409 name_taken): a newcomer
    // cannot take over the old agent's buyers, webhook endpoints (keyed by name) or its sync identity.
    const app = await testApp()
    const gone = await app.register('gone-bot', { skills: ['ping'] })
    expect((await app.call('DELETE', '/api/agents/gone-bot/listing', { key: gone.key })).status).toBe(200)
    for (const name of ['gone-bot', 'GONE-BOT', 'Gone-Bot'])
      expectProblemShape(
        await app.call('POST', '/api/agents/register', { body: { name } }),
        409,
        'name_taken',
      )
  })
})

/** A market with machine payments on: `gone-bot` (withdrawn) and `live-bot` sell the same free and paid skills. */
async function withdrawnMarket() {
  const { facilitator, calls } = recordingFacilitator()
  const app = await testApp(undefined, { mpp: MPP, x402: { facilitator } })
  const skills = [
    { name: 'Ping', type: 'free' },
    { name: 'Deep Scan', type: 'purchasable', price: '0.5' },
  ]
  const owner = privateKeyToAccount(generatePrivateKey())
  const gone = await app.register('gone-bot', { skills, bio: 'scans deeply' })
  const live = await app.register('live-bot', { skills, bio: 'scans deeply' })
  for (const [name, key] of [
    ['gone-bot', gone.key],
    ['live-bot', live.key],
  ] as const)
    await app.call('PUT', `/api/agents/${name}`, { key, body: { walletAddress: WALLET } })
  expect((await app.pair('alice', gone.pairingCode, owner)).status).toBe(200)
  expect((await app.pair('alice', live.pairingCode, owner)).status).toBe(200)
  // A task ordered before the withdrawal, with its buyer's endpoint.
  const earlier = (await app.call('POST', '/api/agents/gone-bot/tasks', { body: { skill: 'ping' } })).json
    .task_id as string
  app.clock.advance(1_000)
  const withdrawn = await app.call('DELETE', '/api/agents/gone-bot/listing', { key: gone.key })
  expect(withdrawn.json.listing).toBe('deleted')
  return { ...app, gone, live, earlier, calls }
}

describe('the listing lifecycle: a withdrawn agent', () => {
  test('attack: a withdrawn agent leaves paid offers and the OpenAPI document (what MPP/x402 discovery reads)', async () => {
    // Should happen: "A withdrawn agent leaves the agent list and search ... new orders are refused". Paid offers
    // and the OpenAPI document advertise orderable paid operations; a withdrawn agent's must not be among them
    // (every order there is a 409 agent_deleted). Today listPaidOffers (memory, libSQL, PostgreSQL) has no listing
    // condition, so discovery keeps advertising them.
    const app = await withdrawnMarket()
    const offers = await app.call('GET', '/api/paid-offers?limit=100')
    expect(offers.status).toBe(200)
    expect(offers.text).toContain('live-bot')
    expect(offers.text).not.toContain('gone-bot')
    for (const path of ['/api/openapi.json', '/openapi.json']) {
      const document = await app.call('GET', path)
      expect(document.status).toBe(200)
      expect(Object.keys(document.json.paths).some((key) => key.includes('/live-bot/'))).toBe(true)
      expect(Object.keys(document.json.paths).filter((key) => key.includes('/gone-bot/'))).toEqual([])
    }
  })

  test('attack: a withdrawn agent leaves list, search, filters, sorts, the AI catalog, MCP resources and A2A search', async () => {
    // Should happen: no list, search or discovery answer names it; its own record says listing "deleted"; the
    // owner's profile, if it shows it, marks it deleted.
    const app = await withdrawnMarket()
    for (const query of [
      '',
      '?q=scan',
      '?q=gone',
      '?owner=alice',
      '?type=paid',
      '?type=free',
      '?sort=trust',
      '?sort=price',
      '?sort=new',
      '?status=idle',
      '?max_price=1',
    ]) {
      const answer = await app.call('GET', `/api/community/agents${query}`)
      expect(answer.status, query).toBe(200)
      expect(answer.text, query).not.toContain('gone-bot')
    }
    expect((await app.call('GET', '/api/community/agents?q=scan')).json.total).toBe(1)
    const catalog = await app.call('GET', '/.well-known/ai-catalog.json')
    expect(catalog.text).toContain('live-bot')
    expect(catalog.text).not.toContain('gone-bot')
    const client = new Client({ name: 'sync-attack', version: '1.0.0' })
    await client.connect(
      new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), {
        fetch: (input, init) => app.app.handle(new Request(input, init)),
      }),
    )
    expect(JSON.stringify(await client.listResources())).not.toContain('gone-bot')
    expect(
      JSON.stringify(await client.callTool({ name: 'search_agents', arguments: { q: 'scan' } })),
    ).not.toContain('gone-bot')
    const a2a = await app.call('POST', '/a2a', {
      headers: { 'a2a-version': '1.0' },
      body: {
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: {
            messageId: crypto.randomUUID(),
            role: 'ROLE_USER',
            parts: [{ data: { skill: 'search-agents', params: { q: 'scan' } } }],
          },
        },
      },
    })
    expect(a2a.text).toContain('live-bot')
    expect(a2a.text).not.toContain('gone-bot')
    expect((await app.call('GET', '/api/community/agents/gone-bot')).json.listing).toBe('deleted')
    const profile = (await app.call('GET', '/api/community/users/alice')).json
    for (const agent of profile.agents ?? [])
      if (agent.name === 'gone-bot') expect(agent.listing).toBe('deleted')
  })

  test('attack: a withdrawn agent takes no order by any channel, and no payment is attempted for one', async () => {
    // Should happen: 409 agent_deleted on REST, on the per-skill path (before any challenge, with an MPP credential
    // or an x402 signature: the facilitator is never asked), over MCP create_task and over A2A (its own interface
    // and the marketplace's order-skill); its task count does not move.
    const app = await withdrawnMarket()
    const count = async () =>
      (await app.call('GET', '/api/agents/gone-bot/tasks?status=all&limit=100', { key: app.gone.key })).json
        .total as number
    const before = await count()
    expectProblemShape(
      await app.call('POST', '/api/agents/gone-bot/tasks', { body: { skill: 'ping' } }),
      409,
      'agent_deleted',
    )
    expectProblemShape(
      await app.call('POST', '/api/agents/gone-bot/tasks', { body: { skill: 'deep-scan' } }),
      409,
      'agent_deleted',
    )
    const paymentHeaders: Record<string, string>[] = [
      {},
      { authorization: 'Payment eyJmb3JnZWQiOnRydWV9' },
      { 'payment-signature': btoa(JSON.stringify({ x402Version: 2, payload: {} })) },
    ]
    for (const headers of paymentHeaders)
      expectProblemShape(
        await app.call('POST', '/api/agents/gone-bot/tasks/deep-scan', { body: {}, headers }),
        409,
        'agent_deleted',
      )
    expect(app.calls).toEqual([])
    const client = new Client({ name: 'sync-attack', version: '1.0.0' })
    await client.connect(
      new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), {
        fetch: (input, init) => app.app.handle(new Request(input, init)),
      }),
    )
    const mcp = await client.callTool({
      name: 'create_task',
      arguments: { agent: 'gone-bot', skill: 'ping' },
    })
    expect(mcp.isError).toBe(true)
    expect(JSON.stringify(mcp)).toContain('agent_deleted')
    for (const [path, data] of [
      ['/a2a/agents/gone-bot', { skill: 'ping' }],
      ['/a2a', { skill: 'order-skill', params: { agent: 'gone-bot', skill: 'ping' } }],
    ] as const) {
      const answer = await app.call('POST', path, {
        headers: { 'a2a-version': '1.0' },
        body: {
          jsonrpc: '2.0',
          id: 1,
          method: 'SendMessage',
          params: { message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ data }] } },
        },
      })
      expect(answer.json?.result?.task, `${path}: ${answer.text}`).toBeUndefined()
    }
    expect(await count()).toBe(before)
  })

  test('attack: e-mail orders: agent/skill of a withdrawn agent is refused; a bare skill both sell goes to the listed one', async () => {
    // Should happen: "gone-bot/ping" is refused (no task); a subject naming only the skill finds its sellers among
    // the listed agents, so with one listed seller it orders from live-bot. Today findSkillSellers has no listing
    // condition: the withdrawn agent makes the subject ambiguous (the refusal lists gone-bot as a choice).
    const app = await withdrawnMarket()
    const mail = (subject: string) =>
      app.market.receiveOrderMail({
        messageId: `<${crypto.randomUUID()}@buyer.example>`,
        from: BUYER_EMAIL,
        subject,
        text: '{}',
        references: [],
      })
    const direct = await mail('gone-bot/ping')
    expect(direct.outcome).toBe('refused')
    const bare = await mail('ping')
    expect(bare).toMatchObject({ outcome: 'task', agent: 'live-bot' })
  })

  test('attack: a withdrawn agent’s tasks stay readable by their buyers and their endpoints still deliver', async () => {
    // Should happen: docs/sync.md: "its record, card, tasks and results stay readable (its buyers still hold their
    // tasks)"; a task ordered before the withdrawal can still be completed, and its buyer's endpoint gets it.
    const app = await testApp(new Date().toISOString(), { webhookAllowPrivate: true })
    const gone = await app.register('gone-bot', { skills: [{ name: 'Ping', type: 'free' }] })
    const id = (await app.call('POST', '/api/agents/gone-bot/tasks', { body: { skill: 'ping' } })).json
      .task_id as string
    const side = receiver()
    expect(
      (await app.call('POST', `/api/agents/gone-bot/tasks/${id}/webhooks`, { body: { url: side.url } }))
        .status,
    ).toBe(201)
    await app.call('DELETE', '/api/agents/gone-bot/listing', { key: gone.key })
    const done = await app.call('POST', `/api/agents/gone-bot/tasks/${id}/complete`, {
      key: gone.key,
      body: { result_url: 'https://results.example/r' },
    })
    expect(done.status).toBe(200)
    const read = await app.call('GET', `/api/agents/gone-bot/tasks/${id}`)
    expect(read.json).toMatchObject({ status: 'completed', result_url: 'https://results.example/r' })
    await app.market.fanOutWebhooks()
    await app.market.deliverWebhooks(fetchWebhookTransport({ allowPrivate: true }))
    expect(bodies(side).map((body) => body.type)).toEqual(['task.completed'])
  })
})

describe('the feed: forged cursors and the updated_since search', () => {
  test('attack: forged feed cursors and positions (huge, negative, non-base36, uppercase, long) are a 400 or an empty page, never a 500', async () => {
    // Should happen: a cursor the server never made is 400 invalid_query; a well-formed one past the end answers no
    // events and the same cursor; f0 starts at the beginning of the public feed.
    const app = await testApp()
    for (let index = 0; index < 3; index++) await app.register(`feed-${index}`)
    for (const cursor of [
      'f-1',
      'F1',
      'f',
      'f1.5',
      'fzzzzzzzzzzz',
      'f'.padEnd(41, '1'),
      "f1' OR 1=1--",
      '%00',
      'f%20',
    ])
      expectProblemShape(await app.call('GET', `/api/feed/live?cursor=${cursor}`), 400, 'invalid_query')
    const beyond = `f${Number.MAX_SAFE_INTEGER.toString(36)}`
    const far = await app.call('GET', `/api/feed/live?cursor=${beyond}`)
    expect(far.status).toBe(200)
    expect(far.json).toEqual({ events: [], next_cursor: beyond })
    const huge = await app.call('GET', '/api/feed/live?after=999999999999999')
    expect(huge.status).toBe(200)
    expect(huge.json.events).toEqual([])
    expectProblemShape(await app.call('GET', '/api/feed/live?after=-1'), 400, 'invalid_query')
    expectProblemShape(await app.call('GET', '/api/feed/live?before=1e9'), 400, 'invalid_query')
    const start = await app.call('GET', '/api/feed/live?cursor=f0')
    expect(start.json.events.map((event: Json) => event.agent)).toEqual(['feed-0', 'feed-1', 'feed-2'])
  })

  test('attack: updated_since far in the future, far in the past, or an impossible date answers a page, never a 500', async () => {
    // Should happen: far future: no events yet, a cursor at the end (new events come on the next poll); far past:
    // every event from the first; a date the lenient parser rolls over is a page too.
    const app = await testApp()
    for (let index = 0; index < 3; index++) await app.register(`feed-${index}`)
    const future = await app.call('GET', '/api/feed/live?updated_since=9999-12-31T23:59:59Z')
    expect(future.status).toBe(200)
    expect(future.json.events).toEqual([])
    await app.register('feed-late')
    const polled = await app.call('GET', `/api/feed/live?cursor=${future.json.next_cursor}`)
    expect(polled.json.events.map((event: Json) => event.agent)).toEqual(['feed-late'])
    const past = await app.call('GET', '/api/feed/live?updated_since=0000-01-01T00:00:00Z')
    expect(past.json.events.map((event: Json) => event.agent)).toEqual([
      'feed-0',
      'feed-1',
      'feed-2',
      'feed-late',
    ])
    for (const since of ['2026-02-30T00:00:00Z', '2026-06-01T12:00:00+14:00'])
      expect(
        (await app.call('GET', `/api/feed/live?updated_since=${encodeURIComponent(since)}`)).status,
      ).toBe(200)
  })

  test('attack: an event stamped earlier than the one before it (a node’s clock behind, a backdated payment time) does not hide the events before it from updated_since', async () => {
    // Should happen: "answers the events from that time on". Event times are not monotonic in id order (feed.ts says
    // so for a payment's time; nodes' clocks differ too, which docs/sync.md allows for the agent list, a minute). The
    // binary search assumes they are: with ids 1 (T+10 s), 2 (T-10 s), 3 (T+20 s), updated_since=T lands after id
    // 2 and event 1, recorded at T+10 s, is never answered.
    const app = await testApp('2026-06-01T12:00:00.000Z')
    const since = '2026-06-01T12:00:00.000Z'
    app.clock.set('2026-06-01T12:00:10.000Z')
    await app.register('first-after')
    app.clock.set('2026-06-01T11:59:50.000Z')
    await app.register('node-behind')
    app.clock.set('2026-06-01T12:00:20.000Z')
    await app.register('last-after')
    const page = await app.call('GET', `/api/feed/live?updated_since=${since}`)
    const agents = page.json.events.map((event: Json) => event.agent)
    expect(agents).toContain('last-after')
    expect(agents).toContain('first-after')
  })
})
