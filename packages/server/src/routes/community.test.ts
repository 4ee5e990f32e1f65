import { describe, expect, test } from 'bun:test'
import { expectProblemShape, TEST_BASE_URL, testApp } from '../testing/http.ts'

describe('GET /api/community/agents', () => {
  test('behavior: an envelope of summary rows, most recently active first, then by name', async () => {
    const { call, register, clock } = await testApp()
    await register('bravo', { skills: ['a', { name: 'b', type: 'purchasable', price: 1 }] })
    await register('alpha')
    clock.advance(60_000)
    const late = await register('charlie')
    clock.advance(60_000)
    const early = await register('delta')
    clock.advance(60_000)
    await call('POST', '/api/agents/charlie/heartbeat', { key: late.key })
    const page = (await call('GET', '/api/community/agents')).json
    expect(page.total).toBe(4)
    expect(page.limit).toBe(20)
    expect(page.offset).toBe(0)
    expect(page.agents.map((agent: { name: string }) => agent.name)).toEqual([
      'charlie',
      'delta',
      'alpha',
      'bravo',
    ])
    const bravo = page.agents[3]
    expect(bravo).toMatchObject({
      name: 'bravo',
      skillCount: 2,
      purchasableCount: 1,
      trustScore: 5,
      heartbeat: { status: 'off', lastSeen: null },
    })
    expect(bravo.cardUrl).toBe(`${TEST_BASE_URL}/api/agents/bravo/agent-card.json`)
    // A summary row: skills in brief (what each is and costs), no milestones.
    expect(bravo.skills).toHaveLength(2)
    for (const skill of bravo.skills)
      expect(Object.keys(skill).sort()).toEqual(['currency', 'name', 'price', 'sla', 'slug', 'type'])
    expect(bravo.milestones).toBeUndefined()
    expect(page.agents[0].heartbeat.status).toBe('live')
    expect(early.key).toBeString()
  })

  test('behavior: limit and offset page through; q is a literal, case-insensitive substring of name or bio', async () => {
    const { call, register } = await testApp()
    await register('WebScout', { bio: 'Finds pages' })
    await register('pricer', { bio: 'quotes 100% of prices' })
    await register('under_score')
    await register('plain')
    const names = async (query: string) =>
      (await call('GET', `/api/community/agents?${query}`)).json.agents
        .map((a: { name: string }) => a.name)
        .sort()
    expect(await names('q=SCOUT')).toEqual(['WebScout'])
    expect(await names('q=finds')).toEqual(['WebScout'])
    expect(await names('q=%25')).toEqual(['pricer'])
    expect(await names('q=_')).toEqual(['under_score'])
    expect(await names('q=100%25%20of')).toEqual(['pricer'])
    expect(await names('q=a,b')).toEqual([])
    expect(await names('q=')).toHaveLength(4)
    const second = (await call('GET', '/api/community/agents?limit=2&offset=2')).json
    expect(second.agents).toHaveLength(2)
    expect(second).toMatchObject({ total: 4, limit: 2, offset: 2 })
  })

  test('error: limit outside 1-100, negative or non-numeric offset are 400 at their pointer', async () => {
    const { call } = await testApp()
    for (const [query, pointer] of [
      ['limit=0', '/limit'],
      ['limit=101', '/limit'],
      ['limit=abc', '/limit'],
      ['limit=1.5', '/limit'],
      ['offset=-1', '/offset'],
      ['offset=1e3', '/offset'],
      [`q=${'x'.repeat(101)}`, '/q'],
    ]) {
      const response = await call('GET', `/api/community/agents?${query}`)
      expectProblemShape(response, 400, 'invalid_query')
      expect(response.json.errors[0].pointer).toBe(pointer)
    }
    const unknown = await call('GET', '/api/community/agents?limt=100&offset=0')
    expectProblemShape(unknown, 400, 'invalid_query')
    expect(unknown.json.errors[0].pointer).toBe('/limt')
    expect(unknown.json.errors[0].detail).toContain('did you mean "limit"?')
  })
})

describe('GET /api/community/agents/{name}', () => {
  test('behavior: the Agent record with exactly the contract fields, found in any case', async () => {
    const { call, register } = await testApp()
    await register('Scout', { bio: 'b', skills: ['s'] })
    const response = await call('GET', '/api/community/agents/SCOUT')
    expect(response.status).toBe(200)
    expect(Object.keys(response.json).sort()).toEqual(
      [
        'name',
        'bio',
        'platform',
        'model',
        'walletAddress',
        'basename',
        'skills',
        'status',
        'heartbeat',
        'milestones',
        'trustScore',
        'owner',
        'createdAt',
        'cardUrl',
        'pageUrl',
        // Additions beside CONTRACT's fields (docs/jobs.md): the seller's delivery record and its ratings; (docs/sync.md)
        // its listing's state and when it last changed.
        'deliveries',
        'ratings',
        'listing',
        'listingMessage',
        'updatedAt',
      ].sort(),
    )
    expect(response.json).toMatchObject({
      name: 'Scout',
      status: 'free',
      owner: null,
      trustScore: 10,
      pageUrl: `${TEST_BASE_URL}/agents/Scout`,
    })
  })

  test('error: unknown or impossible names are 404 problems', async () => {
    const { call } = await testApp()
    for (const name of ['ghost', '..%2Fx', "a'--", '%00']) {
      expectProblemShape(await call('GET', `/api/community/agents/${name}`), 404, 'agent_not_found')
    }
  })
})

describe('GET /api/community/health', () => {
  test('behavior: ok with the database, version and uptime', async () => {
    const { call } = await testApp()
    const response = await call('GET', '/api/community/health')
    expect(response.status).toBe(200)
    expect(response.json).toEqual({
      status: 'ok',
      database: 'ok',
      version: expect.any(String),
      uptimeSeconds: expect.any(Number),
    })
  })

  test('error: 503 with database "error" when the database cannot be read', async () => {
    const { call, store } = await testApp()
    await store.close()
    const response = await call('GET', '/api/community/health')
    expect(response.status).toBe(503)
    expect(response.json).toMatchObject({ status: 'error', database: 'error' })
  })
})
