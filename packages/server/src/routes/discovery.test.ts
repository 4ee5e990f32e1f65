import { describe, expect, test } from 'bun:test'
import { expectProblemShape, TEST_BASE_URL, testApp } from '../testing/http.ts'
import { ENDPOINTS } from './discovery.ts'

describe('GET /api', () => {
  test('behavior: the index lists every endpoint with method, path and auth, and the entry points', async () => {
    const { call } = await testApp()
    const index = (await call('GET', '/api')).json
    expect(index).toMatchObject({
      name: 'agentmarket',
      version: expect.any(String),
      apiVersion: '1',
      openapi: `${TEST_BASE_URL}/api/openapi.json`,
      llms: `${TEST_BASE_URL}/llms.txt`,
      mcp: `${TEST_BASE_URL}/mcp`,
      email: null,
      versioning: { current: 'v1', deprecated: [], policy: expect.any(String) },
    })
    expect(index.endpoints).toContainEqual({ method: 'PUT', path: '/api/agents/{name}', auth: 'bearer' })
    expect((await call('GET', '/api/v1')).json).toEqual(index)
  })

  test('behavior: the index and the mounted routes agree, under /api and /api/v1', async () => {
    const { app } = await testApp()
    const mounted = (prefix: string) =>
      app.routes
        .filter((route) => route.path === prefix || route.path.startsWith(`${prefix}/`))
        .filter((route) => prefix === '/api/v1' || !route.path.startsWith('/api/v1'))
        .filter((route) => !route.path.includes('/docs/assets/'))
        .map(
          (route) =>
            `${route.method} ${route.path
              .replace(prefix, '/api')
              .replace(/\/$/, '')
              .replace(/:(\w+)/g, '{$1}')}`,
        )
        .sort()
    const listed = ENDPOINTS.map((endpoint) => `${endpoint.method} ${endpoint.path}`).sort()
    expect(mounted('/api')).toEqual(listed)
    expect(mounted('/api/v1')).toEqual(listed)
  })
})

describe('versioning and unknown routes', () => {
  test('behavior: every /api path answers the same under /api/v1', async () => {
    const { call, register } = await testApp()
    const { key } = await register('Scout')
    expect((await call('POST', '/api/v1/agents/Scout/heartbeat', { key })).status).toBe(200)
    expect((await call('GET', '/api/v1/community/agents/Scout')).json.heartbeat.status).toBe('live')
    expect((await call('POST', '/api/v1/agents/register', { body: { name: 'Second' } })).status).toBe(200)
    expect((await call('GET', '/api/community/agents')).json.total).toBe(2)
  })

  test('error: unknown versions and routes are 404 problems; a known path with another method is 405', async () => {
    const { call } = await testApp()
    expectProblemShape(await call('GET', '/api/v9/community/health'), 404, 'not_found')
    expectProblemShape(await call('GET', '/api/v2/community/agents'), 404, 'not_found')
    expectProblemShape(await call('GET', '/nowhere'), 404, 'not_found')
    expectProblemShape(await call('DELETE', '/api/agents/Scout'), 405, 'method_not_allowed')
    expectProblemShape(await call('DELETE', '/api/v9/agents/Scout'), 404, 'not_found')
  })
})

describe('deprecated versions', () => {
  test('behavior: a version marked deprecated in configuration answers with Deprecation, Sunset and Link', async () => {
    const { defaultConfig, Marketplace, memoryStore } = await import('@agentmarket/core')
    const { createApp } = await import('../app.ts')
    const market = Marketplace.create({ store: memoryStore(), config: defaultConfig(TEST_BASE_URL) })
    const deprecation = {
      deprecatedAt: new Date('2027-01-01T00:00:00Z'),
      sunsetAt: new Date('2027-07-01T00:00:00Z'),
      successor: 'v2',
    }
    const app = createApp({ market, baseUrl: TEST_BASE_URL, versions: [{ name: 'v1', deprecation }] })
    for (const path of [
      '/api/v1/community/health',
      '/api/community/agents',
      '/api/v1/community/agents/ghost',
      '/api',
    ]) {
      const response = await app.handle(new Request(`http://localhost${path}`))
      expect(response.headers.get('deprecation'), path).toBe('@1798761600')
      expect(response.headers.get('sunset'), path).toBe('Thu, 01 Jul 2027 00:00:00 GMT')
      expect(response.headers.get('link'), path).toBe(`<${TEST_BASE_URL}/api/v2>; rel="successor-version"`)
    }
    const index = await (await app.handle(new Request('http://localhost/api'))).json()
    expect(index.versioning.deprecated).toEqual([
      {
        version: 'v1',
        deprecatedAt: '2027-01-01T00:00:00.000Z',
        sunsetAt: '2027-07-01T00:00:00.000Z',
        successor: 'v2',
      },
    ])
    const unknown = await app.handle(new Request('http://localhost/api/v9/community/health'))
    expect(unknown.status).toBe(404)
    expect(unknown.headers.get('deprecation')).toBeNull()
    expect((await app.handle(new Request('http://localhost/llms.txt'))).headers.get('deprecation')).toBeNull()
  })

  test('behavior: a current version sends no deprecation headers', async () => {
    const { call } = await testApp()
    const response = await call('GET', '/api/v1/community/health')
    expect(response.headers.get('deprecation')).toBeNull()
    expect(response.headers.get('sunset')).toBeNull()
  })
})

describe('GET /llms-full.txt', () => {
  test("behavior: a plain-text guide through every flow with this server's real addresses", async () => {
    const { call } = await testApp()
    const response = await call('GET', '/llms-full.txt')
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8')
    for (const line of [
      `POST ${TEST_BASE_URL}/api/agents/register`,
      `POST ${TEST_BASE_URL}/api/agents/my-agent/heartbeat`,
      `PUT ${TEST_BASE_URL}/api/agents/my-agent`,
      `POST ${TEST_BASE_URL}/api/agents/{name}/tasks`,
      `POST ${TEST_BASE_URL}/api/agents/{name}/tasks/{task_id}/verify-payment`,
      `POST ${TEST_BASE_URL}/api/agents/{name}/tasks/{skill_slug}`,
      `GET ${TEST_BASE_URL}/api/agents/{name}/tasks/{task_id}`,
      `POST ${TEST_BASE_URL}/api/community/users/{username}/pair-agent`,
      `${TEST_BASE_URL}/api/openapi.json`,
    ]) {
      expect(response.text).toContain(line)
    }
    expect(response.text).not.toContain('${')
    expect(response.text).not.toMatch(/\{'|'\}|chain id in your card/)
    expect(response.text).toContain('in USDC on base (chain id 8453)')
    expect(response.text).toContain('E-mail: not enabled on this server')
  })
})

describe('security headers and CORS', () => {
  test('behavior: every answer says nosniff and no-referrer and is readable from any origin; pages keep same-origin', async () => {
    const app = await testApp()
    const { key } = await app.register('Scout')
    const answers = [
      await app.call('GET', '/api/agents/Scout/agent-card.json'),
      await app.call('GET', '/api/community/agents?q=sco'),
      await app.call('GET', '/api/community/agents/Scout'),
      await app.call('POST', '/api/agents/Scout/heartbeat', { key }),
      await app.call('GET', '/api/nothing-here'),
      await app.call('GET', '/api/openapi.json'),
    ]
    for (const answer of answers) {
      expect(answer.headers.get('x-content-type-options')).toBe('nosniff')
      expect(answer.headers.get('referrer-policy')).toBe('no-referrer')
      expect(answer.headers.get('access-control-allow-origin')).toBe('*')
    }
    const page = await app.call('GET', '/agents/Scout')
    expect(page.headers.get('referrer-policy')).toBe('same-origin')
    expect(page.headers.get('content-security-policy')).toBeTruthy()
  })

  test('error: a browser preflight for a write gets no permission, so cross-origin writes stay closed', async () => {
    const app = await testApp()
    const preflight = await app.call('OPTIONS', '/api/agents/register', {
      headers: {
        origin: 'https://elsewhere.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, authorization',
      },
    })
    expect(preflight.status).toBe(404)
    expect(preflight.headers.get('access-control-allow-methods')).toBeNull()
    expect(preflight.headers.get('access-control-allow-headers')).toBeNull()
  })

  test('behavior: with CORS_ORIGINS, a preflight from a listed origin is granted, any other still refused', async () => {
    const app = await testApp(undefined, { corsOrigins: ['https://app.example'] })
    const preflight = (origin: string) =>
      app.call('OPTIONS', '/api/v1/agents/Scout/heartbeat', {
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, content-type',
        },
      })
    const granted = await preflight('https://app.example')
    expect(granted.status).toBe(204)
    expect(granted.headers.get('access-control-allow-origin')).toBe('https://app.example')
    expect(granted.headers.get('access-control-allow-methods')).toContain('POST')
    expect(granted.headers.get('access-control-allow-headers')).toContain('authorization')
    expect(granted.headers.get('vary')).toBe('Origin')
    const refused = await preflight('https://evil.example')
    expect(refused.status).toBe(404)
    expect(refused.headers.get('access-control-allow-methods')).toBeNull()
    const read = await app.call('GET', '/api/community/health', {
      headers: { origin: 'https://evil.example' },
    })
    expect(read.headers.get('access-control-allow-origin')).toBe('*')
    // Problems expose Retry-After and the RateLimit fields to scripts; plain answers skip the header (bench: it costs).
    const problem = await app.call('GET', '/api/community/agents/nobody', {
      headers: { origin: 'https://evil.example' },
    })
    expect(problem.headers.get('access-control-allow-origin')).toBe('*')
    expect(problem.headers.get('access-control-expose-headers')).toContain('retry-after')
  })
})
