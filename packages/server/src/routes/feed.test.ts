import { describe, expect, test } from 'bun:test'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { expectProblemShape, testApp } from '../testing/http.ts'
import { sseReader } from '../testing/sse.ts'

const wallet = privateKeyToAccount(generatePrivateKey())
const WALLET = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'

describe('GET /api/feed/live', () => {
  test('behavior: each action leaves its public event, newest first', async () => {
    const app = await testApp()
    const scout = await app.register('Scout', {
      skills: ['ping', { name: 'Deep', type: 'purchasable', price: 2 }],
    })
    await app.call('PUT', '/api/agents/Scout', {
      key: scout.key,
      body: { skills: ['ping', 'fresh'], bio: 'hi' },
    })
    await app.call('POST', '/api/agents/Scout/milestones', {
      key: scout.key,
      body: { date: '2026-05-01', title: 'Launch' },
    })
    await app.call('POST', '/api/agents/Scout/heartbeat', { key: scout.key })
    app.clock.advance(4 * 60_000)
    await app.call('POST', '/api/agents/Scout/heartbeat', { key: scout.key })
    app.clock.advance(6 * 60_000)
    await app.call('POST', '/api/agents/Scout/heartbeat', { key: scout.key })
    await app.pair('ann', scout.pairingCode, wallet)
    const { events } = (await app.call('GET', '/api/feed/live')).json
    expect(events.map((e: { kind: string }) => e.kind)).toEqual([
      'agent.claimed',
      'agent.online',
      'agent.online',
      'milestone.recorded',
      'skill.published',
      'agent.updated',
      'skill.published',
      'skill.published',
      'agent.registered',
    ])
    for (const event of events) {
      expect(event).toMatchObject({
        id: expect.stringMatching(/^\d+$/),
        kind: expect.any(String),
        at: expect.any(String),
        agent: 'Scout',
      })
      expect(event.summary).toBeString()
    }
    expect(events[0]).toMatchObject({ owner: 'ann', summary: 'ann claimed Scout' })
    expect(events[3].milestone).toMatchObject({ title: 'Launch', trust: 'claimed' })
    expect(events[5].fields).toEqual(['bio', 'skills'])
    expect(events[4].skill).toEqual({
      name: 'fresh',
      slug: 'fresh',
      type: 'free',
      price: null,
      currency: 'USDC',
    })
    expect(events[6].skill).toMatchObject({ slug: 'deep', price: 2 })
  })

  test('behavior: limit, after and before page through the feed', async () => {
    const app = await testApp()
    for (const name of ['a1', 'a2', 'a3', 'a4', 'a5']) await app.register(name)
    const all = (await app.call('GET', '/api/feed/live')).json.events.map((e: { id: string }) => e.id)
    expect(all).toHaveLength(5)
    const ids = (query: string) =>
      app.call('GET', `/api/feed/live?${query}`).then((r) => r.json.events.map((e: { id: string }) => e.id))
    expect(await ids('limit=2')).toEqual(all.slice(0, 2))
    expect(await ids(`before=${all[1]}&limit=2`)).toEqual(all.slice(2, 4))
    expect(await ids(`after=${all[4]}&limit=2`)).toEqual(all.slice(2, 4))
    expect(await ids(`after=${all[0]}`)).toEqual([])
    for (const query of ['limit=0', 'limit=201', 'after=abc', 'before=-1']) {
      expectProblemShape(await app.call('GET', `/api/feed/live?${query}`), 400, 'invalid_query')
    }
    expect((await app.call('GET', '/api/feed/live?limit=200')).status).toBe(200)
  })

  test('behavior: no event carries a key, pairing code, invite code, wallet or e-mail', async () => {
    const app = await testApp()
    const scout = await app.register('Scout', { bio: 'contact me at scout@example.com', skills: ['ping'] })
    await app.call('PUT', '/api/agents/Scout', {
      key: scout.key,
      body: { walletAddress: WALLET, basename: 'scout.base.eth' },
    })
    await app.pair('ann', scout.pairingCode, wallet)
    const text = (await app.call('GET', '/api/feed/live')).text
    expect(JSON.parse(text).events.length).toBeGreaterThan(3)
    for (const secret of [
      scout.key,
      scout.pairingCode,
      WALLET,
      wallet.address,
      WALLET.toLowerCase(),
      '@example.com',
      'inv_',
      'apiKey',
    ]) {
      expect(text).not.toContain(secret)
    }
  })
})

describe('GET /api/feed/live as server-sent events', () => {
  test('behavior: streams each new event with an id, within a second of the action', async () => {
    const app = await testApp()
    const controller = new AbortController()
    const response = await app.app.handle(
      new Request('http://localhost/api/feed/live', {
        headers: { accept: 'text/event-stream' },
        signal: controller.signal,
      }),
    )
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    const stream = sseReader(response)
    const started = performance.now()
    await app.register('Streamer')
    const [event] = await stream.waitFor(1, 1000)
    expect(performance.now() - started).toBeLessThan(1000)
    expect(event?.data).toMatchObject({ kind: 'agent.registered', agent: 'Streamer' })
    expect(event?.id).toBe(event?.data.id as string)
    controller.abort()
  })

  test('behavior: Last-Event-ID resumes after the last event the client saw, then follows live', async () => {
    const app = await testApp()
    await app.register('one')
    await app.register('two')
    await app.register('three')
    const [, second] = (await app.call('GET', '/api/feed/live')).json.events
    const controller = new AbortController()
    const response = await app.app.handle(
      new Request('http://localhost/api/feed/live', {
        headers: { accept: 'text/event-stream', 'last-event-id': second.id },
        signal: controller.signal,
      }),
    )
    const stream = sseReader(response)
    const [missed] = await stream.waitFor(1)
    expect(missed?.data.agent).toBe('three')
    await app.register('four')
    const [, live] = await stream.waitFor(2)
    expect(live?.data.agent).toBe('four')
    expect(stream.frames).toHaveLength(2)
    controller.abort()
  })

  test('behavior: a stream ends cleanly when the client leaves', async () => {
    const app = await testApp()
    const controllers = [new AbortController(), new AbortController()]
    const responses = await Promise.all(
      controllers.map((controller) =>
        app.app.handle(
          new Request('http://localhost/api/feed/live', {
            headers: { accept: 'text/event-stream' },
            signal: controller.signal,
          }),
        ),
      ),
    )
    const readers = responses.map(sseReader)
    await Bun.sleep(20)
    expect(app.market.followerCount()).toBe(2)
    controllers[0]?.abort()
    await Bun.sleep(20)
    expect(app.market.followerCount()).toBe(1)
    await readers[1]?.cancel()
    await Bun.sleep(20)
    expect(app.market.followerCount()).toBe(0)
  })
})
