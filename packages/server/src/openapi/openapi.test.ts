import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { RESPONSE_SCHEMAS, type ResponseName } from '@agentmarket/core/routes'
import { validate } from '@readme/openapi-parser'
import createClient from 'openapi-fetch'
import * as v from 'valibot'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { CLIENT_TYPES_FILE, generateOpenApiTypes, TYPES_FILE } from '../../scripts/openapi-types.ts'
import type { paths } from '../generated/openapi.d.ts'
import { ENDPOINTS } from '../routes/discovery.ts'
import { TEST_BASE_URL, testApp } from '../testing/http.ts'

type DocumentedOperation = {
  operationId?: string
  security?: Record<string, unknown>[]
  responses: Record<string, { content: Record<string, unknown> }>
}

async function documentOf(app: Awaited<ReturnType<typeof testApp>>) {
  return (await app.call('GET', '/api/openapi.json')).json
}

/** Parses `data` with a documented answer schema, failing with the field that does not match. */
function conforms(name: ResponseName, data: unknown) {
  const result = v.safeParse(RESPONSE_SCHEMAS[name], data)
  if (!result.success)
    throw new Error(`${name}: ${JSON.stringify(v.flatten(result.issues))} in ${JSON.stringify(data)}`)
}

describe('GET /api/openapi.json', () => {
  test('behavior: a valid OpenAPI 3.1 document, info.version 1.1.0, served under /api and /api/v1', async () => {
    const app = await testApp()
    const document = await documentOf(app)
    expect(document.openapi).toBe('3.1.0')
    expect(document.info.version).toBe('1.1.0')
    expect(document.servers).toEqual([{ url: TEST_BASE_URL }])
    const result = await validate(structuredClone(document))
    expect(result).toMatchObject({ valid: true, warnings: [] })
    expect((await app.call('GET', '/api/v1/openapi.json')).json).toEqual(document)
  })

  test('behavior: every endpoint of the index is an operation with its request, answer and problem answers', async () => {
    const app = await testApp()
    const document = await documentOf(app)
    const documented = Object.entries(document.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
      .sort()
    const listed = ENDPOINTS.filter((endpoint) => !['/api/openapi.json', '/api/docs'].includes(endpoint.path))
      .map((endpoint) => `${endpoint.method} ${endpoint.path}`)
      .sort()
    expect(documented).toEqual(listed)
    for (const [path, item] of Object.entries(
      document.paths as Record<string, Record<string, DocumentedOperation>>,
    )) {
      for (const [method, operation] of Object.entries(item)) {
        const where = `${method} ${path}`
        expect(operation.operationId, where).toBeString()
        const statuses = Object.keys(operation.responses)
        expect(
          statuses.some((status) => status.startsWith('2')),
          where,
        ).toBe(true)
        for (const status of statuses.filter((s) => s.startsWith('4'))) {
          expect(Object.keys(operation.responses[status]?.content ?? {}), where).toEqual([
            'application/problem+json',
          ])
        }
        if (operation.security?.[0]?.bearer) expect(statuses, where).toContain('401')
      }
    }
    const register = document.paths['/api/agents/register'].post
    expect(register.requestBody.content['application/json'].schema.properties.skills.items).toEqual({
      $ref: '#/components/schemas/SkillInput',
    })
    const listAgents = document.paths['/api/community/agents'].get
    expect(listAgents.parameters.find((p: { name: string }) => p.name === 'limit').schema).toMatchObject({
      type: 'integer',
      minimum: 1,
      maximum: 100,
      default: 20,
    })
  })

  test("behavior: the committed client types (the server's and @agentmarket/client's) match the document", async () => {
    const types = await generateOpenApiTypes()
    expect(types).toBe(readFileSync(TYPES_FILE, 'utf8'))
    expect(types).toBe(readFileSync(CLIENT_TYPES_FILE, 'utf8'))
  })
})

describe('a client generated from the document', () => {
  test('behavior: drives every operation; each answer matches its documented schema', async () => {
    const app = await testApp()
    const client = createClient<paths>({
      baseUrl: 'http://localhost',
      fetch: (request) => app.app.handle(request),
    })
    const owner = privateKeyToAccount(generatePrivateKey())

    conforms('Index', (await client.GET('/api')).data)
    conforms('Health', (await client.GET('/api/community/health')).data)
    const registered = await client.POST('/api/agents/register', {
      body: {
        name: 'typed',
        bio: 'typed client',
        skills: ['ping', { name: 'Deep', type: 'purchasable', price: '2.5' }],
      },
    })
    conforms('Registration', registered.data)
    const apiKey = registered.data?.apiKey ?? ''
    const auth = { authorization: `Bearer ${apiKey}` }
    const path = { name: 'typed' }
    conforms(
      'AgentUpdate',
      (await client.PUT('/api/agents/{name}', { params: { path }, headers: auth, body: { model: 'm-2' } }))
        .data,
    )
    conforms(
      'Heartbeat',
      (await client.POST('/api/agents/{name}/heartbeat', { params: { path }, headers: auth })).data,
    )
    const milestone = await client.POST('/api/agents/{name}/milestones', {
      params: { path },
      headers: auth,
      body: { date: '2026-05-01', title: 'Shipped', proof: 'https://typed.example/proof' },
    })
    expect(milestone.response.status).toBe(201)
    conforms('Milestone', milestone.data)
    conforms('MilestoneList', (await client.GET('/api/agents/{name}/milestones', { params: { path } })).data)
    conforms('AgentCard', (await client.GET('/api/agents/{name}/agent-card.json', { params: { path } })).data)
    conforms(
      'AgentList',
      (await client.GET('/api/community/agents', { params: { query: { q: 'typed', limit: 5 } } })).data,
    )
    conforms('Agent', (await client.GET('/api/community/agents/{name}', { params: { path } })).data)
    const pairingCode = registered.data?.pairingCode ?? ''
    const paired = await client.POST('/api/community/users/{username}/pair-agent', {
      params: { path: { username: 'owner' } },
      headers: {
        'x-wallet-address': owner.address,
        ...(await app.signedProof(
          owner,
          'POST',
          '/api/community/users/owner/pair-agent',
          JSON.stringify({ pairingCode }),
        )),
      },
      body: { pairingCode },
    })
    conforms('Pair', paired.data)
    conforms(
      'UserList',
      (await client.GET('/api/community/users', { params: { query: { limit: 10 } } })).data,
    )
    conforms(
      'User',
      (await client.GET('/api/community/users/{username}', { params: { path: { username: 'owner' } } })).data,
    )
    const signed = (method: string, target: string) => app.walletProof(owner, method, target)
    const edited = await client.PUT('/api/community/users/{username}', {
      params: { path: { username: 'owner' } },
      headers: await signed('PUT', '/api/community/users/owner'),
      body: { bio: 'edited', showcase: { featured: 'typed' } },
    })
    conforms('User', edited.data)
    const invite = await client.GET('/api/community/users/{username}/invite', {
      params: { path: { username: 'owner' } },
      headers: await signed('GET', '/api/community/users/owner/invite'),
    })
    conforms('Invite', invite.data)
    conforms('Feed', (await client.GET('/api/feed/live', { params: { query: { limit: 50 } } })).data)
    const byKey = await client.POST('/api/agents/{name}/keys/rotate', { params: { path }, headers: auth })
    conforms('KeyRotation', byKey.data)
    const byOwner = await client.POST('/api/agents/{name}/keys/rotate', {
      params: { path },
      headers: await app.signedProof(owner, 'POST', '/api/agents/typed/keys/rotate'),
    })
    conforms('KeyRotation', byOwner.data)
    expect(byOwner.data?.apiKey).not.toBe(byKey.data?.apiKey)

    const refused = await client.POST('/api/agents/register', { body: { name: 'x' } })
    expect(refused.response.status).toBe(400)
    conforms('Problem', refused.error)
    expect(refused.error?.errors?.[0]?.pointer).toBe('/name')
  })
})

describe('GET /api/docs', () => {
  test('behavior: an interactive reference served from our own assets, with no external requests', async () => {
    const app = await testApp()
    const page = await app.call('GET', '/api/docs')
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toStartWith('text/html')
    expect(page.text).not.toMatch(/https?:\/\//)
    const sources = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1] ?? '')
    expect(sources).toEqual(['/api/docs/assets/swagger-ui.css', '/api/docs/assets/swagger-ui-bundle.js'])
    for (const source of sources) {
      const asset = await app.app.handle(new Request(`http://localhost${source}`))
      expect(asset.status).toBe(200)
      expect((await asset.arrayBuffer()).byteLength).toBeGreaterThan(100_000)
    }
    expect(page.text).toContain("url: '/api/openapi.json'")
    expect((await app.app.handle(new Request('http://localhost/api/docs/assets/other.js'))).status).toBe(404)
  })
})
