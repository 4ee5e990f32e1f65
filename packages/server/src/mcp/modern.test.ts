import { describe, expect, test } from 'bun:test'
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { testApp } from '../testing/http.ts'

type App = Awaited<ReturnType<typeof testApp>>

const REVISION = '2026-07-28'
const fetchOf = (app: App) => (input: RequestInfo | URL, init?: RequestInit) =>
  app.app.handle(new Request(input, init))

/** The stateless revision's official client (@modelcontextprotocol/client 2), pinned or negotiating, maybe with a key. */
async function modern(app: App, options: { apiKey?: string; mode?: 'auto' | { pin: string } } = {}) {
  const client = new ModernClient(
    { name: 'agentmarket-test', version: '1.0.0' },
    { versionNegotiation: { mode: options.mode ?? { pin: REVISION } } },
  )
  await client.connect(
    new ModernTransport(new URL('http://localhost/mcp'), {
      fetch: fetchOf(app),
      requestInit: options.apiKey ? { headers: { authorization: `Bearer ${options.apiKey}` } } : undefined,
    }),
  )
  return client
}

/** The session era's official client (@modelcontextprotocol/sdk 1.32), as MCP clients connect today. */
async function legacy(app: App) {
  const client = new Client({ name: 'agentmarket-test', version: '1.0.0' })
  await client.connect(
    new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), { fetch: fetchOf(app) }),
  )
  return client
}

/** A raw POST of one JSON-RPC request with the revision's envelope and headers. */
function raw(app: App, body: Record<string, unknown>, headers: Record<string, string>) {
  return app.call('POST', '/mcp', {
    body: { jsonrpc: '2.0', id: 1, ...body },
    headers: { accept: 'application/json, text/event-stream', ...headers },
  })
}

const envelope = {
  'io.modelcontextprotocol/protocolVersion': REVISION,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
}

describe('MCP: the stateless revision (2026-07-28) beside the session era on the same /mcp', () => {
  test("behavior: the revision's client discovers, lists the same tools as a session-era client, and calls them", async () => {
    const app = await testApp()
    const client = await modern(app)
    expect(client.getProtocolEra()).toBe('modern')
    const [now, before] = await Promise.all([client.listTools(), (await legacy(app)).listTools()])
    expect(now.tools.map((tool) => tool.name).sort()).toEqual(before.tools.map((tool) => tool.name).sort())
    const registered = await client.callTool({ name: 'register_agent', arguments: { name: 'keeper' } })
    const { apiKey } = JSON.parse((registered.content as { text: string }[])[0]?.text ?? '{}')
    expect(apiKey).toStartWith('amk_')
    // The bearer key reaches the tools on this era too: the heartbeat is the agent's own.
    const keyed = await modern(app, { apiKey })
    const beat = await keyed.callTool({ name: 'heartbeat', arguments: { agent: 'keeper' } })
    expect(beat.isError).toBeFalsy()
    expect(JSON.parse((beat.content as { text: string }[])[0]?.text ?? '{}').status).toBe('live')
    const refused = await client.callTool({ name: 'heartbeat', arguments: { agent: 'keeper' } })
    expect(refused.isError).toBe(true)
    const guide = await client.readResource({ uri: 'agentmarket://guide/llms.txt' })
    expect(JSON.stringify(guide.contents)).toContain('agentmarket')
  })

  test('behavior: a negotiating client ("auto") lands on the revision; a session-era client still initializes', async () => {
    const app = await testApp()
    expect((await modern(app, { mode: 'auto' })).getProtocolEra()).toBe('modern')
    const old = await legacy(app)
    expect((await old.listTools()).tools.length).toBeGreaterThan(10)
  })

  test("error: the revision's header rules: server/discover answers, a missing or wrong Mcp-Name or version is a 400 with its code", async () => {
    const app = await testApp()
    const headers = { 'mcp-protocol-version': REVISION }
    const discover = await raw(
      app,
      { method: 'server/discover', params: { _meta: envelope } },
      {
        ...headers,
        'mcp-method': 'server/discover',
      },
    )
    expect(discover.status).toBe(200)
    expect(discover.json.result.supportedVersions).toContain(REVISION)
    expect(discover.json.result.capabilities).toMatchObject({ tools: {}, resources: {} })
    const call = { method: 'tools/call', params: { name: 'search_agents', arguments: {}, _meta: envelope } }
    const ok = await raw(app, call, { ...headers, 'mcp-method': 'tools/call', 'mcp-name': 'search_agents' })
    expect(ok.status).toBe(200)
    expect(ok.json.result.structuredContent).toHaveProperty('agents')
    const missing = await raw(app, call, { ...headers, 'mcp-method': 'tools/call' })
    expect([missing.status, missing.json.error.code]).toEqual([400, -32020])
    const wrong = await raw(app, call, { ...headers, 'mcp-method': 'tools/call', 'mcp-name': 'get_task' })
    expect([wrong.status, wrong.json.error.code]).toEqual([400, -32020])
    const version = await raw(
      app,
      {
        method: 'server/discover',
        params: { _meta: { ...envelope, 'io.modelcontextprotocol/protocolVersion': '1900-01-01' } },
      },
      { 'mcp-protocol-version': '1900-01-01', 'mcp-method': 'server/discover' },
    )
    expect([version.status, version.json.error.code]).toEqual([400, -32022])
  })
})
