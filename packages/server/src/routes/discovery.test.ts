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

  test('error: unknown versions, routes and methods are 404 problems', async () => {
    const { call } = await testApp()
    expectProblemShape(await call('GET', '/api/v9/community/health'), 404, 'not_found')
    expectProblemShape(await call('GET', '/api/v2/community/agents'), 404, 'not_found')
    expectProblemShape(await call('GET', '/nowhere'), 404, 'not_found')
    expectProblemShape(await call('DELETE', '/api/agents/Scout'), 404, 'not_found')
  })
})
