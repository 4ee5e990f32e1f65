import { describe, expect, test } from 'bun:test'
import { expectProblem, jsonCaller } from '../../tests/support/examples.ts'
import handler from './index.ts'

const call = jsonCaller('http://localhost', (request) => handler.fetch(request))

/** Registers an agent with a free skill and returns its key. */
async function register(name: string): Promise<string> {
  const registered = await call('POST', '/api/agents/register', {
    body: { name, bio: `${name} pings hosts`, skills: ['Ping'] },
  })
  expect(registered.status).toBe(200)
  return registered.json.apiKey
}

describe('fetch handler', () => {
  test('behavior: an agent registers, heartbeats, and is found live by search, by name and by its card', async () => {
    const key = await register('pinger')
    const beat = await call('POST', '/api/agents/pinger/heartbeat', { key })
    expect(beat.status).toBe(200)
    expect(beat.json).toMatchObject({ status: 'live', agent: 'pinger' })
    const found = await call('GET', '/api/community/agents?q=PINGS&limit=5')
    expect(found.json).toMatchObject({ limit: 5, offset: 0 })
    expect(found.json.agents.map((agent: { name: string }) => agent.name)).toContain('pinger')
    const agent = await call('GET', '/api/v1/community/agents/PINGER')
    expect(agent.json).toMatchObject({ name: 'pinger', heartbeat: { status: 'live' } })
    const card = await call('GET', '/api/agents/pinger/agent-card.json')
    expect(card.json.skills.map((skill: { id: string }) => skill.id)).toEqual(['ping'])
    const etag = card.headers.get('etag') ?? ''
    const again = await call('GET', '/api/agents/pinger/agent-card.json', {
      headers: { 'if-none-match': etag },
    })
    expect(again.status).toBe(304)
  })

  test('behavior: the seller reads its work queue and delivers; the buyer then reads the result', async () => {
    const key = await register('deliverer')
    const created = await call('POST', '/api/agents/deliverer/tasks', { body: { skill: 'ping' } })
    const queue = await call('GET', '/api/agents/deliverer/tasks?status=paid', { key })
    expect(queue.json.tasks.map((task: { task_id: string }) => task.task_id)).toEqual([created.json.task_id])
    const done = await call('POST', `/api/agents/deliverer/tasks/${created.json.task_id}/complete`, {
      key,
      body: { result_url: 'https://results.example/1' },
    })
    expect(done.status).toBe(200)
    const read = await call('GET', `/api/agents/deliverer/tasks/${created.json.task_id}`)
    expect(read.json).toMatchObject({ status: 'completed', result_url: 'https://results.example/1' })
    const stranger = await call('POST', `/api/agents/deliverer/tasks/${created.json.task_id}/complete`, {
      body: { result_url: 'https://results.example/2' },
    })
    expectProblem(stranger, 401, 'unauthorized')
  })

  test("behavior: a free skill's order starts paid, its buyer reads it, and the feed shows the events", async () => {
    await register('orderly')
    const created = await call('POST', '/api/agents/orderly/tasks', { body: { skill: 'ping', buyer: 'ann' } })
    expect(created.status).toBe(201)
    expect(created.json).toMatchObject({ status: 'paid', skill: 'Ping', buyer: 'ann' })
    const read = await call('GET', `/api/agents/orderly/tasks/${created.json.task_id}`)
    expect(read.json).toEqual(created.json)
    const feed = await call('GET', '/api/feed/live?limit=200')
    const kinds = feed.json.events
      .filter((event: { agent: string }) => event.agent === 'orderly')
      .map((event: { kind: string }) => event.kind)
    expect(kinds).toEqual(expect.arrayContaining(['agent.registered', 'task.created']))
  })

  test('error: a body that is not JSON is a 400 invalid_json problem, and creates nothing', async () => {
    expectProblem(await call('POST', '/api/agents/register', { raw: '{"name": "half' }), 400, 'invalid_json')
    expectProblem(await call('GET', '/api/community/agents/half'), 404, 'agent_not_found')
  })

  test('error: a body of another media type is 415, one over 64 KiB is 413', async () => {
    const text = { raw: '{}', headers: { 'content-type': 'text/plain' } }
    expectProblem(await call('POST', '/api/agents/register', text), 415, 'unsupported_media_type')
    const huge = { body: { name: 'huge', bio: 'x'.repeat(70_000) } }
    expectProblem(await call('POST', '/api/agents/register', huge), 413, 'payload_too_large')
  })

  test('error: a wrong key is a 401 problem with a WWW-Authenticate challenge', async () => {
    await register('guarded')
    const answer = await call('POST', '/api/agents/guarded/heartbeat', { key: 'amk_wrong' })
    expectProblem(answer, 401, 'unauthorized')
    expect(answer.headers.get('www-authenticate')).toStartWith('Bearer')
  })

  test('error: an unknown agent, task and route are 404 problems', async () => {
    expectProblem(await call('GET', '/api/agents/nobody/agent-card.json'), 404, 'agent_not_found')
    await register('lonely')
    expectProblem(await call('GET', '/api/agents/lonely/tasks/task_none'), 404, 'task_not_found')
    expectProblem(await call('GET', '/api/nothing/here'), 404, 'not_found')
    expectProblem(await call('DELETE', '/api/community/agents/lonely'), 405, 'method_not_allowed')
  })
})
