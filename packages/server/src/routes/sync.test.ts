import { describe, expect, test } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { expectProblemShape, testApp } from '../testing/http.ts'
import { syncPass } from '../testing/sync.ts'

describe('sync and the listing lifecycle', () => {
  test('behavior: deprecated listings carry their message; a deleted one leaves lists and search, takes no orders, and syncs as a tombstone', async () => {
    const app = await testApp()
    const { call, register, clock } = app
    const old = await register('old-scout', { bio: 'maps', skills: ['ping'] })
    await register('new-scout', { bio: 'maps', skills: ['ping'] })
    clock.advance(1000)
    const since = clock.now().toISOString()
    clock.advance(1000)
    const deprecated = await call('PUT', '/api/agents/old-scout', {
      key: old.key,
      body: { listing: 'deprecated', listingMessage: 'use new-scout' },
    })
    expect(deprecated.json).toMatchObject({ listing: 'deprecated', listingMessage: 'use new-scout' })
    const listed = (await call('GET', '/api/community/agents?q=maps')).json
    expect(
      listed.agents.map((agent: { name: string; listing: string }) => [agent.name, agent.listing]).sort(),
    ).toEqual([
      ['new-scout', 'active'],
      ['old-scout', 'deprecated'],
    ])
    const removed = await call('DELETE', '/api/agents/old-scout/listing', { key: old.key })
    expect(removed.json).toMatchObject({ listing: 'deleted', listingMessage: null })
    expect(
      (await call('GET', '/api/community/agents?q=maps')).json.agents.map((a: { name: string }) => a.name),
    ).toEqual(['new-scout'])
    expectProblemShape(
      await call('POST', '/api/agents/old-scout/tasks', { body: { skill: 'ping' } }),
      409,
      'agent_deleted',
    )
    // Its record stays readable (its buyers' tasks are there), marked.
    expect((await call('GET', '/api/community/agents/old-scout')).json.listing).toBe('deleted')
    const [page] = await syncPass(app, since)
    expect(page.agents).toEqual([{ name: 'old-scout', listing: 'deleted', updatedAt: expect.any(String) }])
    // Listed again.
    clock.advance(1000)
    await call('PUT', '/api/agents/old-scout', { key: old.key, body: { listing: 'active' } })
    expect((await call('GET', '/api/community/agents?q=maps')).json.total).toBe(2)
    expectProblemShape(await call('DELETE', '/api/agents/old-scout/listing'), 401)
  })

  test('attack: paging 10,000 agents while 1,000 writes land gives no duplicate and no gap; the next sync has every change', async () => {
    const app = await testApp()
    const { call, register, clock } = app
    const keys: string[] = []
    const started = performance.now()
    for (let index = 0; index < 10_000; index++)
      keys.push((await register(`agent-${index.toString().padStart(5, '0')}`)).key)
    const seeded = performance.now() - started
    const since = new Date(clock.now().getTime() - 60_000).toISOString()
    clock.advance(5_000)
    let written = 0
    const writes = async () => {
      // Ten writes after each page: bios of agents anywhere in the order, and new agents.
      await Promise.all(
        Array.from({ length: 10 }, async (_, offset) => {
          const target = (written * 7919 + offset * 104_729) % 10_000
          written += 1
          const name = `agent-${target.toString().padStart(5, '0')}`
          const answer =
            written % 5 === 0
              ? await call('POST', '/api/agents/register', { body: { name: `late-${written}` } })
              : await call('PUT', `/api/agents/${name}`, {
                  key: keys[target],
                  body: { bio: `edit ${written}` },
                })
          expect(answer.status).toBe(200)
        }),
      )
      clock.advance(10)
    }
    const passStarted = performance.now()
    const pages = await syncPass(app, since, writes)
    const passMs = performance.now() - passStarted
    const names = pages.flatMap((page) => page.agents.map((agent: { name: string }) => agent.name))
    const original = names.filter((name) => name.startsWith('agent-'))
    expect(written).toBeGreaterThanOrEqual(1_000)
    expect(new Set(names).size).toBe(names.length)
    expect(original).toHaveLength(10_000)
    console.log(
      `sync: 10,000 agents seeded in ${seeded.toFixed(0)} ms; one pass of ${pages.length} pages while ${written} writes landed: ${passMs.toFixed(0)} ms, ${names.length} agents, 0 duplicates, 0 missing`,
    )
    // The next sync, from the pass's next_updated_since, has every agent written during the pass.
    const next = await syncPass(app, pages.at(-1).next_updated_since)
    const changed = new Set(next.flatMap((page) => page.agents.map((agent: { name: string }) => agent.name)))
    const edited = (await call('GET', '/api/community/agents?q=edit&limit=100')).json.total
    expect(changed.size).toBeGreaterThanOrEqual(edited)
    for (const page of next)
      for (const agent of page.agents)
        if (agent.bio?.startsWith('edit')) expect(changed.has(agent.name)).toBe(true)
  }, 300_000)

  test('error: a sync takes cursor or updated_since alone; a forged cursor is a 400', async () => {
    const { call } = await testApp()
    expectProblemShape(
      await call('GET', '/api/community/agents?updated_since=yesterday'),
      400,
      'invalid_query',
    )
    expectProblemShape(await call('GET', '/api/community/agents?cursor=%21%21'), 400, 'invalid_query')
    expectProblemShape(
      await call('GET', '/api/community/agents?updated_since=2026-01-01T00:00:00Z&sort=trust'),
      400,
      'invalid_query',
    )
    expectProblemShape(
      await call('GET', '/api/community/agents?updated_since=2026-01-01T00:00:00Z&cursor=abc'),
      400,
      'invalid_query',
    )
    expectProblemShape(await call('GET', '/api/feed/live?cursor=zz'), 400, 'invalid_query')
    expectProblemShape(await call('GET', '/api/feed/live?cursor=f1&after=3'), 400, 'invalid_query')
  })

  test('behavior: the feed syncs from a time, oldest first, and polling with next_cursor gets each new event once', async () => {
    const { call, register, clock } = await testApp()
    for (let index = 0; index < 5; index++) {
      await register(`early-${index}`)
      // Beyond the minute a feed sync reaches back.
      clock.advance(300_000)
    }
    const since = clock.now().toISOString()
    for (let index = 0; index < 5; index++) {
      await register(`later-${index}`)
      clock.advance(1_000)
    }
    const first = (await call('GET', `/api/feed/live?updated_since=${since}&limit=3`)).json
    expect(first.events.map((event: { agent: string }) => event.agent)).toEqual([
      'later-0',
      'later-1',
      'later-2',
    ])
    const second = (await call('GET', `/api/feed/live?cursor=${first.next_cursor}&limit=3`)).json
    expect(second.events.map((event: { agent: string }) => event.agent)).toEqual(['later-3', 'later-4'])
    const idle = (await call('GET', `/api/feed/live?cursor=${second.next_cursor}`)).json
    expect(idle).toEqual({ events: [], next_cursor: second.next_cursor })
    await register('newest')
    const fresh = (await call('GET', `/api/feed/live?cursor=${idle.next_cursor}`)).json
    expect(fresh.events.map((event: { agent: string }) => event.agent)).toEqual(['newest'])
  })

  test('behavior: MCP search_agents and live_feed take the same sync parameters', async () => {
    const app = await testApp()
    await app.register('mcp-one')
    const client = new Client({ name: 'sync-test', version: '1.0.0' })
    await client.connect(
      new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), {
        fetch: (input, init) => app.app.handle(new Request(input, init)),
      }),
    )
    // biome-ignore lint/suspicious/noExplicitAny: the tool's JSON text, asserted on below
    const text = (result: any) => JSON.parse(result.content[0].text)
    const synced = text(
      await client.callTool({ name: 'search_agents', arguments: { updated_since: '2026-01-01T00:00:00Z' } }),
    )
    expect(synced).toMatchObject({ agents: [{ name: 'mcp-one', listing: 'active' }], next_cursor: null })
    const feed = text(
      await client.callTool({ name: 'live_feed', arguments: { updated_since: '2026-01-01T00:00:00Z' } }),
    )
    expect(feed.events[0]).toMatchObject({ kind: 'agent.registered', agent: 'mcp-one' })
    expect(feed.next_cursor).toMatch(/^f/)
  })
})
