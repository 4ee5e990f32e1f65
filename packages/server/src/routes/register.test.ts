import { describe, expect, test } from 'bun:test'
import { hashSecret } from '@agentmarket/core'
import { expectProblemShape, testApp } from '../testing/http.ts'

describe('POST /api/agents/register', () => {
  test('behavior: answers 200 with the key and pairing code once; stores only their hashes', async () => {
    const { call, store } = await testApp()
    const response = await call('POST', '/api/agents/register', {
      body: {
        name: 'Scout',
        bio: 'finds things',
        platform: 'primaryplatform',
        model: 'm-1',
        skills: ['ping'],
      },
    })
    expect(response.status).toBe(200)
    expect(response.json).toEqual({
      agentId: 'Scout',
      apiKey: expect.stringMatching(/^amk_[0-9a-f]{64}$/),
      pairingCode: expect.stringMatching(/^AGM-[A-HJKMNP-Z2-9]{4}-[A-HJKMNP-Z2-9]{4}$/),
      pairingCodeExpiresAt: '2026-06-08T12:00:00.000Z',
      status: 'free',
      message: expect.any(String),
      warnings: [],
    })
    const record = await store.getAgent('scout')
    expect(record?.apiKeyHash).toBe(hashSecret(response.json.apiKey))
    // Kept as an HMAC under the pairing secret: its plain hash, which a database thief could test codes against, is not.
    expect(record?.pairingCodeHash).toMatch(/^h1:[0-9a-f]{64}$/)
    expect(record?.pairingCodeHash).not.toBe(hashSecret(response.json.pairingCode))
    expect(
      JSON.stringify(record, (_k, value) => (typeof value === 'bigint' ? value.toString() : value)),
    ).not.toContain(response.json.apiKey)
    for (const path of [
      '/api/community/agents/scout',
      '/api/agents/scout/agent-card.json',
      '/api/community/agents',
    ]) {
      const shown = await call('GET', path)
      expect(shown.text).not.toContain(response.json.apiKey)
      expect(shown.text).not.toContain(response.json.pairingCode)
      expect(shown.text).not.toContain(record?.apiKeyHash ?? 'missing')
    }
  })

  test('error: a name taken in any case is 409, and racing registrations give one winner', async () => {
    const { call, register } = await testApp()
    await register('Scout')
    expectProblemShape(
      await call('POST', '/api/agents/register', { body: { name: 'sCOUT' } }),
      409,
      'name_taken',
    )
    const racers = await Promise.all(
      Array.from({ length: 8 }, () => call('POST', '/api/agents/register', { body: { name: 'racer' } })),
    )
    expect(racers.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409, 409, 409])
  })

  test('error: names outside 2-50 letters, digits, hyphens, underscores are 400 at /name', async () => {
    const { call } = await testApp()
    for (const name of ['a', 'x'.repeat(51), '../x', "a'--", 'héllo', 'has space', '', 42, null, ['ab']]) {
      const response = await call('POST', '/api/agents/register', { body: { name } })
      expectProblemShape(response, 400, 'invalid_body')
      expect(response.json.errors).toContainEqual({ pointer: '/name', detail: expect.any(String) })
    }
    expect(
      (await call('POST', '/api/agents/register', { body: { name: 'A_b-9'.padEnd(50, 'z') } })).status,
    ).toBe(200)
    expect((await call('GET', '/api/community/agents')).json.total).toBe(1)
  })

  test('behavior: skills as strings or objects, slugs defaulted, prices exact', async () => {
    const { call } = await testApp()
    const response = await call('POST', '/api/agents/register', {
      body: {
        name: 'seller',
        skills: [
          'Quick Ping',
          {
            name: 'Deep Research',
            type: 'purchasable',
            price: 0.3,
            sla: '24 hours',
            description: 'long reads',
          },
          {
            name: 'Tiny',
            type: 'purchasable',
            price: '0.000001',
            slug: 'tiny-one',
            url: 'https://docs.example/tiny',
          },
        ],
      },
    })
    expect(response.status).toBe(200)
    const agent = (await call('GET', '/api/community/agents/seller')).json
    expect(agent.skills).toEqual([
      {
        name: 'Quick Ping',
        slug: 'quick-ping',
        description: null,
        type: 'free',
        price: null,
        currency: 'USDC',
        sla: null,
        sla_seconds: null,
        review_seconds: 0,
        reveal: 'on_delivery',
        url: null,
        input: null,
      },
      {
        name: 'Deep Research',
        slug: 'deep-research',
        description: 'long reads',
        type: 'purchasable',
        price: 0.3,
        currency: 'USDC',
        sla: '24 hours',
        sla_seconds: null,
        review_seconds: 0,
        reveal: 'on_delivery',
        url: null,
        input: null,
      },
      {
        name: 'Tiny',
        slug: 'tiny-one',
        description: null,
        type: 'purchasable',
        price: 0.000001,
        currency: 'USDC',
        sla: null,
        sla_seconds: null,
        review_seconds: 0,
        reveal: 'on_delivery',
        url: 'https://docs.example/tiny',
        input: null,
      },
    ])
  })

  test('error: skill rules are 400 with a pointer to the bad field', async () => {
    const { call } = await testApp()
    const cases: [unknown, string][] = [
      [[{ name: 'x', type: 'purchasable' }], '/skills/0/price'],
      [['ok', { name: 'x', type: 'purchasable', price: -1 }], '/skills/1/price'],
      [[{ name: 'x', type: 'purchasable', price: 0.1234567 }], '/skills/0/price'],
      [[{ name: 'x', type: 'purchasable', price: 1_000_001 }], '/skills/0/price'],
      [[{ name: 'x', type: 'free', price: 2 }], '/skills/0/price'],
      [[{ name: 'x', currency: 'EUR' }], '/skills/0/currency'],
      [[{ name: 'x', type: 'paid' }], '/skills/0/type'],
      [['Search', 'search'], '/skills/1/slug'],
      [[{ name: 'x'.repeat(101) }], '/skills/0/name'],
      [[{ name: 'x', url: 'javascript:alert(1)' }], '/skills/0/url'],
      [[7], '/skills/0'],
      ['search', '/skills'],
    ]
    for (const [skills, pointer] of cases) {
      const response = await call('POST', '/api/agents/register', { body: { name: 'seller', skills } })
      expectProblemShape(response, 400, 'invalid_body')
      expect(response.json.errors.map((error: { pointer: string }) => error.pointer)).toContain(pointer)
    }
    expectProblemShape(await call('GET', '/api/community/agents/seller'), 404, 'agent_not_found')
  })

  test('error: an unknown or misplaced field is a 400 naming it and the closest known field, and creates nothing', async () => {
    const { call } = await testApp()
    for (const [body, pointer, hint] of [
      [{ name: 'extra', admin: true, apiKey: 'amk_mine' }, '/admin', null],
      [
        { name: 'extra', walletAdress: '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed' },
        '/walletAdress',
        'walletAddress',
      ],
      [{ name: 'extra', Skills: ['ping'] }, '/Skills', 'skills'],
      [{ name: 'extra', skills: [{ name: 'a', prise: 1 }] }, '/skills/0/prise', 'price'],
    ] as const) {
      const response = await call('POST', '/api/agents/register', { body })
      expectProblemShape(response, 400, 'invalid_body')
      expect(response.json.errors[0].pointer).toBe(pointer)
      if (hint) expect(response.json.errors[0].detail).toContain(`did you mean "${hint}"?`)
      expect(response.json.detail).not.toMatch(/Invalid key|Expected|received/)
    }
    expect((await call('GET', '/api/community/agents/extra')).status).toBe(404)
  })

  test('behavior: a seller sets its wallet at registration; paid skills without one are a warning, not a silent dead end', async () => {
    const { call } = await testApp()
    const paid = [{ name: 'Deep Research', type: 'purchasable', price: 0.01 }]
    const ready = await call('POST', '/api/agents/register', {
      body: { name: 'ready', skills: paid, walletAddress: '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed' },
    })
    expect([ready.status, ready.json.warnings]).toEqual([200, []])
    const agent = await call('GET', '/api/community/agents/ready')
    expect(agent.json.walletAddress).toBe('0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed')
    const order = await call('POST', '/api/agents/ready/tasks', { body: { skill: 'deep-research' } })
    expect(order.status).toBe(201)

    const walletless = await call('POST', '/api/agents/register', {
      body: { name: 'walletless', skills: paid },
    })
    expect(walletless.status).toBe(200)
    expect(walletless.json.warnings).toEqual([expect.stringContaining('No walletAddress is set')])
    expect(walletless.json.warnings[0]).toContain('deep-research')
    const update = await call('PUT', '/api/agents/walletless', {
      key: walletless.json.apiKey,
      body: { bio: 'still no wallet' },
    })
    expect(update.json.warnings).toHaveLength(1)
    const fixed = await call('PUT', '/api/agents/walletless', {
      key: walletless.json.apiKey,
      body: { walletAddress: '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed' },
    })
    expect([fixed.status, fixed.json.warnings]).toEqual([200, []])
    const bad = await call('POST', '/api/agents/register', {
      body: { name: 'badwallet', walletAddress: '0x12' },
    })
    expectProblemShape(bad, 400, 'invalid_body')
    expect(bad.json.errors[0].pointer).toBe('/walletAddress')
  })

  test('error: a missing field says it is required, in plain words', async () => {
    const { call } = await testApp()
    const response = await call('POST', '/api/agents/register', { body: { bio: 'no name' } })
    expectProblemShape(response, 400, 'invalid_body')
    expect(response.json.errors).toEqual([{ pointer: '/name', detail: 'is required' }])
    expect(response.json.detail).toBe('The request body is invalid: /name is required.')
  })

  test('error: bodies that are not a JSON object, not JSON, or too large', async () => {
    const { call } = await testApp()
    expectProblemShape(await call('POST', '/api/agents/register', { body: '{"name":' }), 400, 'invalid_json')
    expectProblemShape(await call('POST', '/api/agents/register', { body: '[]' }), 400, 'invalid_body')
    expectProblemShape(await call('POST', '/api/agents/register', { body: '"scout"' }), 400, 'invalid_body')
    expectProblemShape(await call('POST', '/api/agents/register'), 400, 'invalid_body')
    expectProblemShape(
      await call('POST', '/api/agents/register', {
        body: 'name=scout',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      415,
      'unsupported_media_type',
    )
    expectProblemShape(
      await call('POST', '/api/agents/register', { body: { name: 'big', bio: 'x'.repeat(100_000) } }),
      413,
      'payload_too_large',
    )
    const bio = await call('POST', '/api/agents/register', { body: { name: 'big', bio: 'x'.repeat(1001) } })
    expectProblemShape(bio, 400, 'invalid_body')
    expect(bio.json.errors[0].pointer).toBe('/bio')
    expectProblemShape(
      await call('POST', '/api/agents/register', { body: { name: 'big', platform: 'mars' } }),
      400,
      'invalid_body',
    )
    expect((await call('GET', '/api/community/agents')).json.total).toBe(0)
  })

  test('error: a chunked body over 64 KiB is 413 without Content-Length', async () => {
    const { app } = await testApp()
    const chunk = new TextEncoder().encode(`{"name":"chunky","bio":"${'x'.repeat(16 * 1024)}`)
    let sent = 0
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 6) controller.enqueue(chunk)
        else controller.close()
      },
    })
    const request = new Request('http://localhost/api/agents/register', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: stream,
      // @ts-expect-error: Bun's RequestInit accepts duplex for streamed bodies
      duplex: 'half',
    })
    expect(request.headers.get('content-length')).toBeNull()
    const response = await app.handle(request)
    expect(response.status).toBe(413)
    expect(response.headers.get('content-type')).toBe('application/problem+json')
  })
})
