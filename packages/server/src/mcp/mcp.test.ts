import { describe, expect, test } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { jsonLogger } from '../log.ts'
import { testApp } from '../testing/http.ts'

type App = Awaited<ReturnType<typeof testApp>>

/** The official MCP client connected to the app's /mcp, optionally with an agent's bearer key. */
async function connect(app: App, apiKey?: string) {
  const client = new Client({ name: 'agentmarket-test', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), {
    fetch: (input, init) => app.app.handle(new Request(input, init)),
    requestInit: apiKey ? { headers: { authorization: `Bearer ${apiKey}` } } : undefined,
  })
  await client.connect(transport)
  return client
}

/** The JSON a tool answered (its text content). */
// biome-ignore lint/suspicious/noExplicitAny: tests read many shapes and assert on them
function json(result: any): any {
  return JSON.parse(result.content[0].text)
}

describe('POST /mcp', () => {
  test('behavior: lists every tool with an input schema, and each tool works through the core', async () => {
    const app = await testApp()
    const anonymous = await connect(app)
    const { tools } = await anonymous.listTools()
    expect(tools.map((tool) => tool.name).sort()).toEqual(
      [
        'accept_delivery',
        'reject_delivery',
        'rate_task',
        'set_budget',
        'get_budget',
        'complete_task',
        'create_task',
        'get_agent',
        'get_agent_card',
        'get_task',
        'get_user',
        'heartbeat',
        'list_users',
        'live_feed',
        'record_milestone',
        'register_agent',
        'search_agents',
        'update_agent',
        'verify_payment',
      ].sort(),
    )
    for (const tool of tools) {
      expect(tool.description?.length, tool.name).toBeGreaterThan(20)
      expect(tool.inputSchema.type, tool.name).toBe('object')
      expect(JSON.stringify(tool.inputSchema), tool.name).not.toContain('#/components')
    }
    expect(tools.find((tool) => tool.name === 'register_agent')?.inputSchema.required).toEqual(['name'])

    const registered = json(
      await anonymous.callTool({
        name: 'register_agent',
        arguments: {
          name: 'mcp-seller',
          bio: 'via MCP',
          skills: ['ping', { name: 'Deep', type: 'purchasable', price: 1 }],
        },
      }),
    )
    expect(registered.apiKey).toStartWith('amk_')
    const seller = await connect(app, registered.apiKey)
    const call = async (client: Client, name: string, args: Record<string, unknown>) => {
      const result = await client.callTool({ name, arguments: args })
      expect(result.isError, `${name}: ${JSON.stringify(result.content)}`).toBeFalsy()
      return json(result)
    }
    expect((await call(seller, 'update_agent', { agent: 'mcp-seller', model: 'm-1' })).model).toBe('m-1')
    expect((await call(seller, 'heartbeat', { agent: 'mcp-seller' })).status).toBe('live')
    expect(
      (await call(seller, 'record_milestone', { agent: 'mcp-seller', date: '2026-05-01', title: 'First' }))
        .trust,
    ).toBe('claimed')
    expect((await call(anonymous, 'search_agents', { q: 'mcp' })).total).toBe(1)
    expect((await call(anonymous, 'get_agent', { agent: 'MCP-SELLER' })).name).toBe('mcp-seller')
    expect((await call(anonymous, 'get_agent_card', { agent: 'mcp-seller' })).name).toBe('mcp-seller')
    expect((await call(anonymous, 'list_users', {})).total).toBe(0)
    const task = await call(anonymous, 'create_task', {
      agent: 'mcp-seller',
      skill: 'ping',
      params: { q: 1 },
    })
    expect(task.status).toBe('paid')
    expect((await call(anonymous, 'get_task', { agent: 'mcp-seller', task_id: task.task_id })).task_id).toBe(
      task.task_id,
    )
    const done = await call(seller, 'complete_task', {
      agent: 'mcp-seller',
      task_id: task.task_id,
      result_url: 'https://results.example/mcp',
    })
    expect(done.status).toBe('completed')
    const kinds = (await call(anonymous, 'live_feed', { limit: 5 })).events.map(
      (event: { kind: string }) => event.kind,
    )
    expect(kinds).toContain('task.completed')

    const verify = await anonymous.callTool({
      name: 'verify_payment',
      arguments: { agent: 'mcp-seller', task_id: task.task_id, tx_hash: `0x${'a'.repeat(64)}` },
    })
    expect(verify.isError).toBe(true)
    expect(json(verify).code).toBe('task_not_pending')

    await app.pair('owner', registered.pairingCode, privateKeyToAccount(generatePrivateKey()))
    expect((await call(anonymous, 'get_user', { username: 'owner' })).agents[0].name).toBe('mcp-seller')
  })

  test('error: a missing or wrong key and bad arguments are tool errors with the problem code, changing nothing', async () => {
    const app = await testApp()
    const { key } = await app.register('keeper')
    const anonymous = await connect(app)
    const denied = await anonymous.callTool({ name: 'heartbeat', arguments: { name: 'keeper' } })
    expect(denied.isError).toBe(true)
    expect(json(denied)).toMatchObject({ code: 'unauthorized', status: 401 })
    const stranger = await connect(app, 'amk_not-a-key')
    expect(
      json(await stranger.callTool({ name: 'update_agent', arguments: { name: 'keeper', bio: 'x' } })).code,
    ).toBe('unauthorized')
    const owner = await connect(app, key)
    const invalid = await owner.callTool({
      name: 'record_milestone',
      arguments: { name: 'keeper', date: 'soon', title: 'x' },
    })
    expect(invalid.isError).toBe(true)
    expect(json(invalid)).toMatchObject({ code: 'invalid_body', status: 400, errors: [{ pointer: '/date' }] })
    const noName = await anonymous.callTool({ name: 'get_agent', arguments: {} })
    expect(json(noName)).toMatchObject({ code: 'invalid_body', errors: [{ pointer: '/agent' }] })
    expect((await app.call('GET', '/api/agents/keeper/milestones')).json.milestones).toEqual([])
    expect((await app.call('GET', '/api/community/agents/keeper')).json.bio).toBeNull()
  })

  test('behavior: resources hold the guide and each agent card', async () => {
    const app = await testApp()
    await app.register('carded')
    const client = await connect(app)
    const { resources } = await client.listResources()
    expect(resources.map((resource) => resource.uri)).toEqual([
      'agentmarket://guide/llms.txt',
      'agentmarket://agents/carded/card',
    ])
    const card = await client.readResource({ uri: 'agentmarket://agents/carded/card' })
    expect(JSON.parse(String((card.contents[0] as { text?: string }).text)).name).toBe('carded')
    const guide = await client.readResource({ uri: 'agentmarket://guide/llms.txt' })
    expect(String((guide.contents[0] as { text?: string }).text)).toContain('/api/agents/register')
  })

  test('error: GET and DELETE answer 405 with Allow: POST', async () => {
    const app = await testApp()
    for (const method of ['GET', 'DELETE']) {
      const answer = await app.app.handle(new Request('http://localhost/mcp', { method }))
      expect(answer.status).toBe(405)
      expect(answer.headers.get('allow')).toBe('POST')
    }
  })

  test('attack: arguments naming another path (name, id, task_id beside agent) cannot reach another agent or task', async () => {
    const app = await testApp()
    const anonymous = await connect(app)
    const victim = json(
      await anonymous.callTool({ name: 'register_agent', arguments: { name: 'victim', skills: ['ping'] } }),
    )
    const attacker = json(
      await anonymous.callTool({ name: 'register_agent', arguments: { name: 'attacker', skills: ['ping'] } }),
    )
    const order = async (agent: string) =>
      json(await anonymous.callTool({ name: 'create_task', arguments: { agent, skill: 'ping' } })).task_id
    const victimTask = await order('victim')
    const attackerTask = await order('attacker')
    const client = await connect(app, attacker.apiKey)
    // Arguments that are no field of the tool are refused (400), never read as another path's parameters.
    const stray = await client.callTool({
      name: 'complete_task',
      arguments: {
        agent: 'attacker',
        task_id: attackerTask,
        name: 'victim',
        id: victimTask,
        result_url: 'https://attacker.example/r',
      },
    })
    expect([stray.isError, json(stray).status]).toEqual([true, 400])
    const completed = json(
      await client.callTool({
        name: 'complete_task',
        arguments: { agent: 'attacker', task_id: attackerTask, result_url: 'https://attacker.example/r' },
      }),
    )
    expect(completed.task_id).toBe(attackerTask)
    const denied = await client.callTool({
      name: 'complete_task',
      arguments: { agent: 'victim', task_id: victimTask, result_url: 'https://attacker.example/r' },
    })
    expect([denied.isError, json(denied).status]).toEqual([true, 403])
    // The former argument name beside the current one, naming another agent: which was meant is not guessed.
    const beat = await client.callTool({
      name: 'heartbeat',
      arguments: { name: 'victim', agent: 'attacker' },
    })
    expect(json(beat)).toMatchObject({ status: 400, errors: [{ pointer: '/name' }] })
    expect(json(await client.callTool({ name: 'heartbeat', arguments: { agent: 'victim' } })).status).toBe(
      403,
    )
    expect(json(await client.callTool({ name: 'heartbeat', arguments: { name: 'victim' } })).status).toBe(403)
    const task = json(
      await anonymous.callTool({ name: 'get_task', arguments: { agent: 'victim', task_id: victimTask } }),
    )
    expect(task.status).toBe('paid')
    expect(victim.apiKey).not.toBe(attacker.apiKey)
  })

  test('error: a tool failing on an unexpected chain fault answers chain_unavailable and logs the fault with its request id', async () => {
    const lines: string[] = []
    const bug = new TypeError('the node answered something else')
    const logger = jsonLogger('info', (text) => lines.push(text))
    const app = await testApp(undefined, {
      logger,
      chain: {
        headBlock: async () => 10n,
        receipts: async () => {
          throw bug
        },
      },
    })
    const registered = await app.call('POST', '/api/agents/register', {
      body: { name: 'faulty', skills: [{ name: 'Report', type: 'purchasable', price: 1 }] },
    })
    const key = registered.json.apiKey
    await app.call('PUT', '/api/agents/faulty', {
      key,
      body: { walletAddress: privateKeyToAccount(generatePrivateKey()).address },
    })
    const client = new Client({ name: 'agentmarket-test', version: '1.0.0' })
    await client.connect(
      new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), {
        fetch: (input, init) => app.app.handle(new Request(input, init)),
        requestInit: { headers: { 'x-request-id': 'trace-42' } },
      }),
    )
    const task = json(
      await client.callTool({ name: 'create_task', arguments: { agent: 'faulty', skill: 'report' } }),
    )
    const failed = await client.callTool({
      name: 'verify_payment',
      arguments: {
        agent: 'faulty',
        task_id: task.task_id,
        tx_hash: `0x${'ab'.repeat(32)}`,
        payer_signature: `0x${'cd'.repeat(65)}`,
      },
    })
    expect(failed.isError).toBe(true)
    expect(json(failed)).toMatchObject({ code: 'chain_unavailable', status: 503 })
    logger.flush(true)
    const logged = lines
      .flatMap((text) => text.trim().split('\n'))
      .map((line) => JSON.parse(line))
      .find((line) => line.msg === 'mcp tool failed')
    expect(logged).toMatchObject({ requestId: 'trace-42' })
    expect(JSON.stringify(logged)).toContain('TypeError')
  })
})
