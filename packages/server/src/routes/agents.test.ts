import { describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expectProblemShape, TEST_BASE_URL, testApp } from '../testing/http.ts'

const WALLET = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'

describe('PUT /api/agents/{name}', () => {
  test('behavior: changes only the fields sent; skills, when sent, replace the list', async () => {
    const { call, register } = await testApp()
    const { key } = await register('Scout', { bio: 'old bio', model: 'm-1', skills: ['a', 'b'] })
    const updated = await call('PUT', '/api/agents/scout', {
      key,
      body: { bio: 'new bio', walletAddress: WALLET.toLowerCase() },
    })
    expect(updated.status).toBe(200)
    expect(updated.json).toMatchObject({ name: 'Scout', bio: 'new bio', model: 'm-1', walletAddress: WALLET })
    expect(updated.json.skills.map((skill: { slug: string }) => skill.slug)).toEqual(['a', 'b'])
    const replaced = await call('PUT', '/api/agents/Scout', {
      key,
      body: { skills: [{ name: 'C', type: 'purchasable', price: 1.25 }], basename: 'scout.base.eth' },
    })
    expect(replaced.json.skills).toEqual([
      {
        name: 'C',
        slug: 'c',
        description: null,
        type: 'purchasable',
        price: 1.25,
        currency: 'USDC',
        sla: null,
        sla_seconds: null,
        review_seconds: 0,
        reveal: 'on_delivery',
        url: null,
        input: null,
      },
    ])
    expect(replaced.json).toMatchObject({ bio: 'new bio', basename: 'scout.base.eth', walletAddress: WALLET })
    const cleared = await call('PUT', '/api/agents/Scout', { key, body: { bio: null, walletAddress: null } })
    expect(cleared.json).toMatchObject({ bio: null, walletAddress: null, basename: 'scout.base.eth' })
  })

  test('behavior: an absent body changes nothing', async () => {
    const { call, register } = await testApp()
    const { key } = await register('Scout', { bio: 'kept' })
    const before = (await call('GET', '/api/community/agents/Scout')).json
    const response = await call('PUT', '/api/agents/Scout', { key })
    expect(response.status).toBe(200)
    expect(response.json).toEqual({ ...before, warnings: [] })
  })

  test("error: 401 without or with a wrong key, 403 with another agent's key, 404 for no such agent", async () => {
    const { call, register } = await testApp()
    const scout = await register('Scout')
    const other = await register('Other')
    const missing = await call('PUT', '/api/agents/Scout', { body: { bio: 'x' } })
    expectProblemShape(missing, 401, 'unauthorized')
    expect(missing.headers.get('www-authenticate')).toStartWith('Bearer')
    const wrong = await call('PUT', '/api/agents/Scout', { body: { bio: 'x' }, key: 'amk_wrong' })
    expectProblemShape(wrong, 401, 'unauthorized')
    expect(wrong.headers.get('www-authenticate')).toStartWith('Bearer')
    expectProblemShape(
      await call('PUT', '/api/agents/Scout', {
        body: { bio: 'x' },
        headers: { authorization: `Basic ${scout.key}` },
      }),
      401,
    )
    expectProblemShape(
      await call('PUT', '/api/agents/Scout', { body: { bio: 'x' }, key: other.key }),
      403,
      'forbidden',
    )
    expectProblemShape(
      await call('PUT', '/api/agents/Nobody', { body: { bio: 'x' }, key: scout.key }),
      404,
      'agent_not_found',
    )
    expect((await call('GET', '/api/community/agents/Scout')).json.bio).toBeNull()
  })

  test('error: bad fields are 400 and change nothing', async () => {
    const { call, register } = await testApp()
    const { key } = await register('Scout', { bio: 'kept', skills: ['a'] })
    const before = (await call('GET', '/api/community/agents/Scout')).json
    const cases: [unknown, string][] = [
      [{ walletAddress: '0x123' }, '/walletAddress'],
      [{ walletAddress: '0x5AAEB6053F3E94C9b9A09f33669435E7Ef1BeAed' }, '/walletAddress'],
      [{ walletAddress: 5 }, '/walletAddress'],
      [{ bio: 7, model: 'fine' }, '/bio'],
      [{ model: 'm'.repeat(101) }, '/model'],
      [{ skills: [{ name: 'p', type: 'purchasable' }] }, '/skills/0/price'],
      [{ skills: {} }, '/skills'],
    ]
    for (const [body, pointer] of cases) {
      const response = await call('PUT', '/api/agents/Scout', { key, body })
      expectProblemShape(response, 400, 'invalid_body')
      expect(response.json.errors.map((error: { pointer: string }) => error.pointer)).toContain(pointer)
    }
    expectProblemShape(await call('PUT', '/api/agents/Scout', { key, body: '[1]' }), 400, 'invalid_body')
    expectProblemShape(await call('PUT', '/api/agents/Scout', { key, body: 'nope' }), 400, 'invalid_json')
    expect((await call('GET', '/api/community/agents/Scout')).json).toEqual(before)
  })
})

describe('POST /api/agents/{name}/heartbeat', () => {
  test('behavior: answers live with lastSeen and the agent', async () => {
    const { call, register, clock } = await testApp()
    const { key } = await register('Scout')
    const response = await call('POST', '/api/agents/scout/heartbeat', { key })
    expect(response.status).toBe(200)
    expect(response.json).toEqual({ status: 'live', lastSeen: clock.now().toISOString(), agent: 'Scout' })
  })

  test('behavior: liveness is live at 5:00, idle at 5:01 and 30:00, off at 30:01 and when never seen', async () => {
    const { call, register, clock } = await testApp('2026-06-01T12:00:00.000Z')
    const { key } = await register('Scout')
    const heartbeatOf = async () => (await call('GET', '/api/community/agents/Scout')).json.heartbeat
    expect(await heartbeatOf()).toEqual({ status: 'off', lastSeen: null })
    await call('POST', '/api/agents/Scout/heartbeat', { key })
    const expected = (status: string) => ({ status, lastSeen: '2026-06-01T12:00:00.000Z' })
    for (const [at, status] of [
      ['12:05:00', 'live'],
      ['12:05:01', 'idle'],
      ['12:30:00', 'idle'],
      ['12:30:01', 'off'],
    ] as const) {
      clock.set(`2026-06-01T${at}.000Z`)
      expect(await heartbeatOf()).toEqual(expected(status))
      expect((await call('GET', '/api/agents/Scout/agent-card.json')).json._extensions.heartbeat).toEqual(
        expected(status),
      )
      const row = (await call('GET', '/api/community/agents')).json.agents[0]
      expect(row.heartbeat).toEqual(expected(status))
    }
    await call('POST', '/api/agents/Scout/heartbeat', { key })
    expect(await heartbeatOf()).toEqual({ status: 'live', lastSeen: '2026-06-01T12:30:01.000Z' })
  })

  test("error: 401 without a key, 403 with another agent's key, 404 for no such agent", async () => {
    const { call, register } = await testApp()
    await register('Scout')
    const other = await register('Other')
    expectProblemShape(await call('POST', '/api/agents/Scout/heartbeat'), 401, 'unauthorized')
    expectProblemShape(
      await call('POST', '/api/agents/Scout/heartbeat', { key: other.key }),
      403,
      'forbidden',
    )
    expectProblemShape(
      await call('POST', '/api/agents/Ghost/heartbeat', { key: other.key }),
      404,
      'agent_not_found',
    )
    expect((await call('GET', '/api/community/agents/Scout')).json.heartbeat.lastSeen).toBeNull()
  })
})

describe('milestones', () => {
  test('behavior: 201 with id, trust and createdAt; listed newest date first; shown on the agent and card', async () => {
    const { call, register, clock } = await testApp()
    const { key } = await register('Scout')
    const claimed = await call('POST', '/api/agents/Scout/milestones', {
      key,
      body: { date: '2026-01-15', title: 'First order' },
    })
    expect(claimed.status).toBe(201)
    expect(claimed.json).toEqual({
      id: expect.stringMatching(/^ms_[0-9a-f]{32}$/),
      date: '2026-01-15',
      title: 'First order',
      description: null,
      proof: null,
      trust: 'claimed',
      createdAt: clock.now().toISOString(),
    })
    // The name in the path is matched in any case.
    const verified = await call('POST', '/api/agents/SCOUT/milestones', {
      key,
      body: {
        date: '2026-03-01',
        title: 'Audit passed',
        description: 'by a third party',
        proof: 'https://audits.example/scout',
      },
    })
    expect(verified.json.trust).toBe('verified')
    const list = await call('GET', '/api/agents/scout/milestones')
    expect(list.json.milestones.map((m: { title: string }) => m.title)).toEqual([
      'Audit passed',
      'First order',
    ])
    const agent = (await call('GET', '/api/community/agents/Scout')).json
    expect(agent.milestones).toEqual(list.json.milestones)
    // Registered, then one point per milestone whatever its label: a proof URL proves nothing by itself.
    expect(agent.trustScore).toBe(5 + 1 + 1)
    expect((await call('GET', '/api/agents/Scout/agent-card.json')).json._extensions.milestones).toEqual(
      list.json.milestones,
    )
  })

  test('error: bad dates, proofs and titles are 400 at their pointer; auth as for the other writes', async () => {
    const { call, register } = await testApp()
    const { key } = await register('Scout')
    const other = await register('Other')
    const cases: [unknown, string][] = [
      [{ date: '2026-02-30', title: 't' }, '/date'],
      [{ date: '2026-1-5', title: 't' }, '/date'],
      [{ date: '2026-01-05T00:00:00Z', title: 't' }, '/date'],
      [{ title: 't' }, '/date'],
      [{ date: '2026-01-05' }, '/title'],
      [{ date: '2026-01-05', title: '   ' }, '/title'],
      [{ date: '2026-01-05', title: 't', proof: 'ftp://files.example/x' }, '/proof'],
      [{ date: '2026-01-05', title: 't', proof: 'javascript:alert(1)' }, '/proof'],
      [{ date: '2026-01-05', title: 't'.repeat(201) }, '/title'],
    ]
    for (const [body, pointer] of cases) {
      const response = await call('POST', '/api/agents/Scout/milestones', { key, body })
      expectProblemShape(response, 400, 'invalid_body')
      expect(response.json.errors.map((error: { pointer: string }) => error.pointer)).toContain(pointer)
    }
    const good = { date: '2026-01-05', title: 't' }
    expectProblemShape(await call('POST', '/api/agents/Scout/milestones', { body: good }), 401)
    expectProblemShape(
      await call('POST', '/api/agents/Scout/milestones', { body: good, key: other.key }),
      403,
    )
    expectProblemShape(
      await call('POST', '/api/agents/Scout/milestones', { body: good, key: `amk_${'0'.repeat(64)}` }),
      401,
    )
    expectProblemShape(
      await call('POST', '/api/agents/Ghost/milestones', { body: good, key: other.key }),
      404,
      'agent_not_found',
    )
    expectProblemShape(await call('GET', '/api/agents/Ghost/milestones'), 404, 'agent_not_found')
    expect((await call('GET', '/api/agents/Scout/milestones')).json).toEqual({
      milestones: [],
      total: 0,
      limit: 100,
      offset: 0,
    })
    for (const query of ['limit=0', 'limit=101', 'offset=-1', 'limit=x', 'page=2'])
      expectProblemShape(await call('GET', `/api/agents/Scout/milestones?${query}`), 400, 'invalid_query')
  })

  test('behavior: the list pages with limit and offset, counts them all, and a new milestone shows at once', async () => {
    const { call, register } = await testApp()
    const { key } = await register('Pager')
    const record = (date: string, title: string) =>
      call('POST', '/api/agents/Pager/milestones', { key, body: { date, title } })
    for (const [date, title] of [
      ['2026-01-01', 'a'],
      ['2026-02-01', 'b'],
      ['2026-03-01', 'c'],
    ] as const)
      await record(date, title)
    const page = async (query: string) => (await call('GET', `/api/agents/Pager/milestones?${query}`)).json
    const titles = async (query: string) =>
      (await page(query)).milestones.map((m: { title: string }) => m.title)
    expect(await titles('limit=2')).toEqual(['c', 'b'])
    expect(await page('limit=2&offset=2')).toMatchObject({ total: 3, limit: 2, offset: 2 })
    expect(await titles('limit=2&offset=2')).toEqual(['a'])
    expect(await titles('offset=3')).toEqual([])
    // The pages just read are cached; a write moves the store's version, so they are read again.
    await record('2026-04-01', 'd')
    expect(await titles('limit=2')).toEqual(['d', 'c'])
    expect((await page('limit=2')).total).toBe(4)
  })
})

describe('GET /api/agents/{name}/agent-card.json', () => {
  test('behavior: an A2A v1.0 card with every field SPEC.md lists and the commerce extension', async () => {
    const { call, register } = await testApp()
    const { key } = await register('Scout', {
      bio: 'finds things',
      model: 'm-1',
      platform: 'primaryplatform',
      skills: [
        'ping',
        { name: 'Research', type: 'purchasable', price: 0.01, description: 'deep', sla: '24 hours' },
      ],
    })
    await call('PUT', '/api/agents/Scout', { key, body: { walletAddress: WALLET } })
    const response = await call('GET', '/api/agents/scout/agent-card.json')
    expect(response.status).toBe(200)
    expect(response.headers.get('cache-control')).toBe('public, max-age=60')
    const card = response.json
    expect(card).toMatchObject({
      name: 'Scout',
      description: 'finds things',
      url: `${TEST_BASE_URL}/agents/Scout`,
      supportedInterfaces: [
        { url: `${TEST_BASE_URL}/a2a/agents/Scout`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        {
          url: `${TEST_BASE_URL}/a2a/agents/Scout/rest`,
          protocolBinding: 'HTTP+JSON',
          protocolVersion: '1.0',
        },
      ],
      version: expect.any(String),
      provider: { organization: expect.any(String), url: TEST_BASE_URL },
      capabilities: { streaming: false, pushNotifications: false },
      defaultInputModes: ['application/json'],
      defaultOutputModes: ['application/json'],
      authentication: { schemes: ['none'] },
    })
    expect(card.skills[0]).toMatchObject({
      id: 'ping',
      name: 'ping',
      type: 'free',
      tags: expect.any(Array),
      url: expect.any(String),
    })
    expect(card.skills[0].pricing).toBeUndefined()
    expect(card.skills[1]).toMatchObject({
      id: 'research',
      name: 'Research',
      description: 'deep',
      type: 'purchasable',
      pricing: { amount: 0.01, currency: 'USDC', amountBaseUnits: '10000' },
    })
    expect(card._extensions).toEqual({
      platform: 'primaryplatform',
      model: 'm-1',
      registryRegistered: true,
      birthday: expect.any(String),
      birthdayVerified: true,
      marketUrl: TEST_BASE_URL,
      owner: null,
      heartbeat: { status: 'off', lastSeen: null },
      milestones: [],
      commerce: {
        chain: 'base',
        chainId: 8453,
        payment_wallet: WALLET,
        usdc_contract: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
        escrow_contract: null,
        job_escrow_contract: null,
        deposit_abi: 'deposit(bytes32 taskId, address seller, uint256 amount, uint256 slaDeadline)',
        deposit_abi_json: [
          {
            name: 'deposit',
            type: 'function',
            stateMutability: 'nonpayable',
            inputs: [
              { name: 'taskId', type: 'bytes32' },
              { name: 'seller', type: 'address' },
              { name: 'amount', type: 'uint256' },
              { name: 'slaDeadline', type: 'uint256' },
            ],
            outputs: [],
          },
        ],
        flow: expect.any(String),
        payer_proof: {
          domain: { name: 'agentmarket', version: '1', chainId: 8453 },
          types: { PaymentClaim: expect.any(Array) },
          primaryType: 'PaymentClaim',
          message: { market: TEST_BASE_URL, agent: expect.any(String), task: '', txHash: null },
        },
      },
    })
  })

  test('behavior: ETag answers 304 to If-None-Match until the agent changes', async () => {
    const { call, register } = await testApp()
    const { key } = await register('Scout')
    const first = await call('GET', '/api/agents/Scout/agent-card.json')
    const etag = first.headers.get('etag')
    expect(etag).toBeTruthy()
    const cached = await call('GET', '/api/agents/Scout/agent-card.json', {
      headers: { 'if-none-match': etag ?? '' },
    })
    expect(cached.status).toBe(304)
    expect(cached.text).toBe('')
    expect(cached.headers.get('etag')).toBe(etag)
    await call('PUT', '/api/agents/Scout', { key, body: { bio: 'changed' } })
    const changed = await call('GET', '/api/agents/Scout/agent-card.json', {
      headers: { 'if-none-match': etag ?? '' },
    })
    expect(changed.status).toBe(200)
    expect(changed.headers.get('etag')).not.toBe(etag)
  })

  test('error: 404 problem for an unknown agent', async () => {
    const { call } = await testApp()
    expectProblemShape(await call('GET', '/api/agents/ghost/agent-card.json'), 404, 'agent_not_found')
  })

  test('behavior: a changed card is never answered stale from the ready bytes of the card before it', async () => {
    const { call, register, clock } = await testApp('2026-06-01T12:00:00.000Z')
    const { key } = await register('Scout', { bio: 'first' })
    const path = '/api/agents/Scout/agent-card.json'
    const a2a = { headers: { accept: 'application/a2a+json' } }
    const card = async (options = {}) => {
      const answer = await call('GET', path, options)
      return { ...answer, description: answer.json?.description, etag: answer.headers.get('etag') }
    }
    // Asked again and again, each variant (JSON, A2A's media type) is answered from its ready bytes.
    for (let round = 0; round < 3; round++) {
      expect((await card()).description).toBe('first')
      expect((await card(a2a)).description).toBe('first')
    }
    const first = await card()
    const firstA2a = await card(a2a)
    expect(firstA2a.headers.get('content-type')).toBe('application/a2a+json')
    expect(firstA2a.etag).not.toBe(first.etag)

    await call('PUT', '/api/agents/Scout', { key, body: { bio: 'second' } })
    const second = await card({ headers: { 'if-none-match': first.etag ?? '' } })
    expect(second.status).toBe(200)
    expect(second.description).toBe('second')
    expect(second.etag).not.toBe(first.etag)
    expect(second.headers.get('content-type')).toBe('application/json')
    const secondA2a = await card({ headers: { ...a2a.headers, 'if-none-match': firstA2a.etag ?? '' } })
    expect(secondA2a.status).toBe(200)
    expect(secondA2a.description).toBe('second')
    expect(secondA2a.headers.get('content-type')).toBe('application/a2a+json')
    // The new bytes answer 304 to their own ETag, and the old ETag no more.
    expect((await card({ headers: { 'if-none-match': second.etag ?? '' } })).status).toBe(304)

    // Liveness moves with time alone: live after a heartbeat, idle past 5 minutes, with no write between.
    await call('POST', '/api/agents/Scout/heartbeat', { key })
    for (let round = 0; round < 2; round++)
      expect((await card()).json._extensions.heartbeat.status).toBe('live')
    clock.advance(5 * 60_000 + 1_000)
    expect((await card()).json._extensions.heartbeat.status).toBe('idle')
    expect((await card(a2a)).status).toBe(200)
  })

  test("behavior: another process's write to the card shows, not the ready bytes of the card before it", async () => {
    const folder = mkdtempSync(join(tmpdir(), 'agentmarket-card-'))
    try {
      const databaseUrl = `file:${join(folder, 'market.db')}`
      const reader = await testApp('2026-06-01T12:00:00.000Z', { databaseUrl })
      const writer = await testApp('2026-06-01T12:00:00.000Z', { databaseUrl })
      const { key } = await writer.register('Scout', { bio: 'first' })
      const description = async () =>
        (await reader.call('GET', '/api/agents/Scout/agent-card.json')).json.description
      for (let round = 0; round < 3; round++) expect(await description()).toBe('first')
      await writer.call('PUT', '/api/agents/Scout', { key, body: { bio: 'second' } })
      // The reader sees other processes' writes within its change window (a few ms): asked until it does, bounded.
      let seen = await description()
      for (let asked = 0; seen !== 'second' && asked < 2_000; asked++) {
        await Bun.sleep(1)
        seen = await description()
      }
      expect(seen).toBe('second')
      await reader.store.close()
      await writer.store.close()
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  })
})
