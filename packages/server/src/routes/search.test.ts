import { describe, expect, test } from 'bun:test'
import { IDLE_WINDOW_MS, LIVE_WINDOW_MS } from '@agentmarket/core'
import { expectProblemShape, testApp } from '../testing/http.ts'

type App = Awaited<ReturnType<typeof testApp>>

/** The names of the agents `query` lists over HTTP. */
async function listed(call: App['call'], query: string): Promise<string[]> {
  const response = await call('GET', `/api/community/agents?${query}`)
  expect(response.status).toBe(200)
  return response.json.agents.map((agent: { name: string }) => agent.name)
}

const paid = (name: string, price: number | string, description?: string) => ({
  name,
  type: 'purchasable',
  price,
  ...(description ? { description } : {}),
})

describe('GET /api/community/agents: search, filters and orders', () => {
  test('behavior: "Data Map" finds the agent selling "GDPR Data Map"; a skill description or slug finds its seller', async () => {
    const { call, register, clock } = await testApp()
    await register('privacy-desk', { bio: 'Compliance help', skills: [paid('GDPR Data Map', 25)] })
    clock.advance(1_000)
    await register('mapper', {
      skills: [{ name: 'Tiles', slug: 'vector-tiles', description: 'Renders maps' }],
    })
    expect(await listed(call, 'q=Data%20Map')).toEqual(['privacy-desk'])
    expect(await listed(call, 'q=data%20map')).toEqual(['privacy-desk'])
    expect(await listed(call, 'q=renders')).toEqual(['mapper'])
    expect(await listed(call, 'q=vector-tiles')).toEqual(['mapper'])
    expect(await listed(call, 'q=ma')).toEqual(['mapper', 'privacy-desk'])
  })

  test('behavior: each row carries its skills in brief (name, slug, type, price, currency, SLA), so a search needs no call per agent', async () => {
    const { call, register } = await testApp()
    await register('privacy-desk', { skills: [{ ...paid('GDPR Data Map', 25), sla: '2h' }, 'Hello'] })
    const response = await call('GET', '/api/community/agents?q=privacy')
    expect(response.json.agents[0].skills).toEqual([
      {
        name: 'GDPR Data Map',
        slug: 'gdpr-data-map',
        type: 'purchasable',
        price: 25,
        currency: 'USDC',
        sla: '2h',
      },
      { name: 'Hello', slug: 'hello', type: 'free', price: null, currency: 'USDC', sla: null },
    ])
  })

  test('behavior: type, max_price, owner and sort reach the store through the query string', async () => {
    const { call, register, clock } = await testApp()
    await register('cheap', { skills: [paid('Quick', '0.05')] })
    clock.advance(1_000)
    await register('dear', { skills: [paid('Slow', 2), 'Hello'] })
    clock.advance(1_000)
    await register('gratis', { skills: ['Hello'] })
    expect(await listed(call, 'type=paid')).toEqual(['dear', 'cheap'])
    expect(await listed(call, 'type=free')).toEqual(['gratis', 'dear'])
    expect(await listed(call, 'max_price=0.05')).toEqual(['cheap'])
    expect(await listed(call, 'max_price=0.049999')).toEqual([])
    expect(await listed(call, 'max_price=2&sort=price')).toEqual(['cheap', 'dear'])
    expect(await listed(call, 'sort=price')).toEqual(['cheap', 'dear', 'gratis'])
    expect(await listed(call, 'sort=new')).toEqual(['gratis', 'dear', 'cheap'])
    expect(await listed(call, 'owner=nobody')).toEqual([])
    const page = (await call('GET', '/api/community/agents?type=paid&limit=1&offset=1')).json
    expect(page).toMatchObject({ total: 2, limit: 1, offset: 1 })
    expect(page.agents[0].name).toBe('cheap')
  })

  test('error: a bad filter or order is a 400 at its pointer that says what to send; nothing is listed', async () => {
    const { call } = await testApp()
    const cases: [string, string, RegExp][] = [
      ['sort=cheapest', '/sort', /"activity", "trust", "price", "new"/],
      ['type=gratis', '/type', /"free".*"paid"/],
      ['max_price=abc', '/max_price', /USDC amount from 0 to 1000000 .*e\.g\. 0\.5/],
      ['max_price=0.0000001', '/max_price', /at most 6 decimal places/],
      ['max_price=-1', '/max_price', /from 0/],
      ['status=online', '/status', /"live", "idle", "off"/],
      ['owner=a%20b', '/owner', /letters, digits, hyphens or underscores/],
    ]
    for (const [query, pointer, detail] of cases) {
      const response = await call('GET', `/api/community/agents?${query}`)
      expectProblemShape(response, 400, 'invalid_query')
      expect(response.json.errors[0].pointer).toBe(pointer)
      expect(response.json.errors[0].detail).toMatch(detail)
      expect(response.json.detail).toContain(pointer)
    }
  })

  test('behavior: a cached status page does not outlive the moment an agent turns idle or off, listed or not', async () => {
    const { call, register, clock } = await testApp()
    const beacon = await register('beacon')
    await register('quiet')
    await call('POST', '/api/agents/beacon/heartbeat', { key: beacon.key })
    expect(await listed(call, 'status=live')).toEqual(['beacon'])
    expect(await listed(call, 'status=idle')).toEqual([])
    expect(await listed(call, 'status=off')).toEqual(['quiet'])
    clock.advance(LIVE_WINDOW_MS)
    expect(await listed(call, 'status=live')).toEqual(['beacon'])
    expect(await listed(call, 'status=idle')).toEqual([])
    // No write happens: only time moves, and every cached page above must be recomputed.
    clock.advance(1)
    expect(await listed(call, 'status=live')).toEqual([])
    expect(await listed(call, 'status=idle')).toEqual(['beacon'])
    clock.advance(IDLE_WINDOW_MS - LIVE_WINDOW_MS - 1)
    expect(await listed(call, 'status=off')).toEqual(['quiet'])
    clock.advance(1)
    expect(await listed(call, 'status=off')).toEqual(['beacon', 'quiet'])
    expect(await listed(call, 'status=idle')).toEqual([])
  })

  test('behavior: a cached trust page does not outlive the liveness of an agent it does not show', async () => {
    const { call, register, clock } = await testApp()
    const beacon = await register('beacon')
    await call('POST', '/api/agents/beacon/heartbeat', { key: beacon.key })
    clock.advance(60_000)
    await register('quiet')
    // beacon is live (5 more points) though quiet was active later; the second page shows quiet alone.
    expect(await listed(call, 'sort=trust')).toEqual(['beacon', 'quiet'])
    expect(await listed(call, 'sort=trust&limit=1&offset=1')).toEqual(['quiet'])
    clock.advance(IDLE_WINDOW_MS)
    expect(await listed(call, 'sort=trust&limit=1&offset=1')).toEqual(['beacon'])
    expect(await listed(call, 'sort=trust')).toEqual(['quiet', 'beacon'])
  })

  test('behavior: the OpenAPI document lists each filter and order with its allowed values', async () => {
    const { call } = await testApp()
    const document = (await call('GET', '/api/openapi.json')).json
    const parameters = document.paths['/api/community/agents'].get.parameters as {
      name: string
      schema: { enum?: string[]; description?: string }
    }[]
    const byName = Object.fromEntries(parameters.map((parameter) => [parameter.name, parameter.schema]))
    expect(byName.sort?.enum).toEqual(['activity', 'trust', 'price', 'new'])
    expect(byName.type?.enum).toEqual(['free', 'paid'])
    expect(byName.status?.enum).toEqual(['live', 'idle', 'off'])
    expect(byName.max_price?.description).toContain('USDC')
    expect(byName.owner?.description).toContain('username')
    expect(byName.q?.description).toContain('skill')
  })

  test('behavior: the front page passes the filters to the same action and keeps them in its page links', async () => {
    const { call, register, clock } = await testApp()
    for (let index = 0; index < 26; index++) {
      await register(`seller-${index}`, { skills: index % 5 === 4 ? ['Hello'] : [paid('Survey', 1 + index)] })
      clock.advance(1_000)
    }
    const home = await call('GET', '/?type=paid&sort=price&max_price=30')
    expect(home.status).toBe(200)
    const shown = [...home.text.matchAll(/data-agent="([^"]+)"/g)].map((match) => match[1])
    expect(shown).toEqual(await listed(call, 'type=paid&sort=price&max_price=30&limit=20'))
    expect(shown[0]).toBe('seller-0')
    expect(home.text).toContain('1–20 of 21')
    const next = /href="([^"]+)" rel="next"/.exec(home.text)?.[1]?.replaceAll('&amp;', '&') ?? ''
    expect(new URLSearchParams(next.split('?')[1])).toEqual(
      new URLSearchParams('type=paid&sort=price&max_price=30&offset=20'),
    )
    expect((await call('GET', '/?sort=cheapest')).status).toBe(400)
  })
})
