import { describe, expect, test } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { openapiDocument, withPaidOperations } from '../openapi/document.ts'
import { expectProblemShape, testApp } from '../testing/http.ts'

const INPUT = {
  type: 'object',
  properties: { topic: { type: 'string', minLength: 3 }, depth: { type: 'integer', maximum: 5 } },
  required: ['topic'],
  additionalProperties: false,
}
const SKILLS = [{ name: 'Deep Research', type: 'free', input: INPUT }]

describe('typed skill inputs over HTTP, machine payments and MCP', () => {
  test('behavior: the schema is kept and shown on the agent record and its card', async () => {
    const { call, register } = await testApp()
    await register('scout', { skills: SKILLS })
    expect((await call('GET', '/api/community/agents/scout')).json.skills[0].input).toEqual(INPUT)
    expect((await call('GET', '/api/agents/scout/agent-card.json')).json.skills[0].inputSchema).toEqual(INPUT)
    // The page's "How to order" sends example params built from it, which the schema accepts.
    const page = await call('GET', '/agents/scout', { headers: { accept: 'text/html' } })
    expect(page.text).toContain('&quot;topic&quot;')
  })

  test('error: params that break it are a 400 invalid_params into /params on every order channel, creating nothing', async () => {
    const { app, call, register } = await testApp()
    await register('scout', { skills: SKILLS })
    const bad = { skill: 'deep-research', params: { topic: 'ai', depth: 9 } }
    const http = await call('POST', '/api/agents/scout/tasks', { body: bad })
    expectProblemShape(http, 400, 'invalid_params')
    expect(http.json.errors).toEqual([
      { pointer: '/params/topic', detail: 'must have at least 3 characters' },
      { pointer: '/params/depth', detail: 'must be at most 5' },
    ])
    const perSkill = await call('POST', '/api/agents/scout/tasks/deep-research', { body: { params: {} } })
    expectProblemShape(perSkill, 400, 'invalid_params')
    expect(perSkill.json.errors).toEqual([{ pointer: '/params/topic', detail: 'is required' }])

    const client = new Client({ name: 'test', version: '1.0.0' })
    await client.connect(
      new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), {
        fetch: (input, init) => app.handle(new Request(input, init)),
      }),
    )
    const tool = await client.callTool({ name: 'create_task', arguments: { agent: 'scout', ...bad } })
    expect(tool.isError).toBe(true)
    const problem = JSON.parse((tool.content as { text: string }[])[0]?.text ?? '{}')
    expect(problem).toMatchObject({ code: 'invalid_params', status: 400 })
    expect((await call('GET', '/api/agents/scout/tasks?status=all')).json.total).toBe(0)

    const good = await call('POST', '/api/agents/scout/tasks', {
      body: { skill: 'deep-research', params: { topic: 'solar' } },
    })
    expect(good.status).toBe(201)
  })

  test('behavior: the per-skill OpenAPI operation describes params with the skill input schema', async () => {
    const { app } = await testApp()
    const document = withPaidOperations(openapiDocument(app, { baseUrl: 'http://localhost:3000' }), {
      offers: [
        {
          agent: 'scout',
          slug: 'deep-research',
          name: 'Deep Research',
          description: null,
          amountBaseUnits: 10_000n,
          currency: '0x20C000000000000000000000b9537d11c60E8b50',
          input: INPUT,
        },
      ],
      next: null,
    })
    const body = (
      document.paths as Record<string, { post: { requestBody: { content: Record<string, unknown> } } }>
    )['/api/agents/scout/tasks/deep-research']?.post.requestBody.content['application/json'] as {
      schema: { properties: { params: unknown } }
    }
    expect(body.schema.properties.params).toEqual(INPUT)
  })
})
