import { describe, expect, test } from 'bun:test'
import { testApp } from '../testing/http.ts'
import { recordingRateLimits } from '../testing/rateLimits.ts'
import { a2aRateClass, clientAddress, mcpRateClasses, routeRateClasses } from './rateLimits.ts'

const MCP_LIST = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' })

const peer = (address: string) => ({ requestIP: () => ({ address }) })
const forwarded = (value: string) =>
  new Request('http://market.example/api/agents/register', { headers: { 'x-forwarded-for': value } })

describe('rate classes of the matched route', () => {
  /** An app whose limiter records the class of every bucket a request spends (and never refuses). */
  async function recordingApp() {
    const { rateLimits, spent } = recordingRateLimits()
    const { app } = await testApp(undefined, { rateLimits })
    /** The classes of the buckets spent since `spent` was last emptied. */
    const classes = () => spent.map((one) => one.bucket)
    return { app, spent, classes }
  }

  // What each route must spend, written down here rather than read from the routes' own facts.
  const STRICT: Record<string, string> = {
    // Every attempt; a registration that would create an agent also spends register (tests/rateLimits.test.ts).
    'POST /agents/register': 'register_attempt',
    'POST /community/users/:username/pair-agent': 'pairing',
    'POST /agents/:name/keys/rotate': 'keys',
    'POST /agents/:name/tasks': 'payment',
    'POST /agents/:name/tasks/:id': 'payment',
    'POST /agents/:name/tasks/:id/verify-payment': 'payment',
  }
  // Balancers' probes are never limited: a refused probe would pull a healthy node (docs/operations.md).
  const UNLIMITED = new Set(['GET /health/live', 'GET /health/ready'])
  const unlimited = (method: string, path: string) =>
    UNLIMITED.has(`${method} ${path.replace(/^\/api(\/v1)?(?=\/)/, '')}`)
  const expected = (method: string, path: string) => {
    if (path === '/mcp' && method === 'POST') return 'read' // tools/list, charged by the MCP handler
    // An A2A request of `{}` (or the wildcard path) names no order: a read, charged by the A2A handler.
    if (path.startsWith('/a2a')) return 'read'
    return (
      STRICT[`${method} ${path.replace(/^\/api(\/v1)?(?=\/)/, '')}`] ?? (method === 'GET' ? 'read' : 'write')
    )
  }
  const concrete = (path: string) =>
    path
      .replace(':name', 'scout')
      .replace(':id', 'task_0')
      .replace(':username', 'ada')
      .replace(':file', 'swagger-ui.css')

  test('behavior: every route, by every alias the router accepts, spends its own bucket exactly once', async () => {
    const { app, spent, classes } = await recordingApp()
    let walked = 0
    for (const route of app.routes) {
      const path = concrete(route.path)
      const must = path === '/' ? [path] : [path, `${path}/`, path.replace(/^\/([^/]+)/, '/$1/.')]
      const may = [
        path.replace(/^\/api\/(?!v1\/)/, '/api/v1/'),
        path.replace(/^\/api\/v1\//, '/api/'),
        path.replace(/^\/api/, '/API'),
        path.replace(/^\//, '//'),
        path.replace(/a/, '%61'),
        `${path}//`,
      ]
      for (const alias of new Set([...must, ...may])) {
        spent.length = 0
        const body = route.method === 'GET' ? undefined : route.path === '/mcp' ? MCP_LIST : '{}'
        const answer = await app.handle(
          new Request(`http://localhost${alias}`, {
            method: route.method,
            headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
            body,
          }),
        )
        await answer.body?.cancel()
        if (unlimited(route.method, route.path)) {
          expect(classes(), `${route.method} ${alias}`).toEqual([])
          continue
        }
        if (spent.length === 0 && !must.includes(alias)) {
          expect(answer.status, `${route.method} ${alias}`).toBe(404)
          continue
        }
        expect(classes(), `${route.method} ${alias}`).toEqual([expected(route.method, route.path)])
        walked += 1
      }
    }
    expect(walked).toBeGreaterThan(app.routes.length * 3)
  })

  test('behavior: an A2A request is charged as the A2A table says, over either binding', () => {
    expect(a2aRateClass('POST', { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: {} }, null)).toBe(
      'payment',
    )
    expect(a2aRateClass('POST', { jsonrpc: '2.0', id: 1, method: 'GetTask', params: {} }, null)).toBe('read')
    expect(a2aRateClass('POST', { jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} }, null)).toBe(
      'read',
    )
    expect(a2aRateClass('POST', undefined, '/message:send')).toBe('payment')
    expect(a2aRateClass('POST', undefined, '/message:stream')).toBe('payment')
    expect(a2aRateClass('GET', { message: {} }, '/tasks/task_1')).toBe('read')
    expect(a2aRateClass('POST', { jsonrpc: '2.0', id: 1, method: 'Nope' }, null)).toBe('read')
  })

  test('behavior: routes without a declared class spend read for GET and write otherwise', () => {
    const classOf = routeRateClasses([
      { method: 'POST', path: '/x', hooks: { detail: { 'x-rate-limit': 'register' } } },
      { method: 'POST', path: '/mcp', hooks: { detail: { 'x-rate-limit': 'none' } } },
    ])
    expect(classOf('POST', '/x')).toBe('register')
    expect(classOf('POST', '/mcp')).toBeNull()
    expect(classOf('GET', '/x')).toBe('read')
    expect(classOf('DELETE', '/y')).toBe('write')
  })

  test('behavior: each MCP message is charged by what its tool does', () => {
    const call = (name: string) => ({ jsonrpc: '2.0', method: 'tools/call', params: { name } })
    expect(mcpRateClasses(call('register_agent'))).toEqual(['register_attempt'])
    expect(
      mcpRateClasses([
        call('verify_payment'),
        call('create_task'),
        call('heartbeat'),
        { method: 'tools/list' },
      ]),
    ).toEqual(['payment', 'payment', 'write', 'read'])
    expect(mcpRateClasses(null)).toEqual(['read'])
  })
})

describe('clientAddress', () => {
  test('behavior: X-Forwarded-For counts only with trusted proxies, read that many entries from the right', () => {
    expect(clientAddress(forwarded('198.51.100.1'), peer('10.0.0.2'), 0)).toBe('10.0.0.2')
    expect(clientAddress(forwarded('6.6.6.6, 198.51.100.1'), peer('10.0.0.2'), 1)).toBe('198.51.100.1')
    expect(clientAddress(forwarded('6.6.6.6, 198.51.100.1, 10.0.0.9'), peer('10.0.0.2'), 2)).toBe(
      '198.51.100.1',
    )
    expect(clientAddress(forwarded('198.51.100.1'), peer('10.0.0.2'), 3)).toBe('198.51.100.1')
    expect(clientAddress(new Request('http://market.example/'), peer('10.0.0.2'), 1)).toBe('10.0.0.2')
    expect(clientAddress(new Request('http://market.example/'), null, 0)).toBe('unknown')
  })

  test("cost: a request's peer is asked of the server once, however many buckets and rows need its address", () => {
    // Bun asks the socket on every call (a system call): an order's limiter and row, a registration's two buckets.
    let asked = 0
    const counting = { requestIP: () => ({ address: `10.0.0.${++asked}` }) }
    const request = forwarded('198.51.100.1')
    expect(clientAddress(request, counting, 0)).toBe('10.0.0.1')
    expect(clientAddress(request, counting, 0)).toBe('10.0.0.1')
    expect(asked).toBe(1)
    // Behind trusted proxies the address comes from X-Forwarded-For: the peer is asked only when the header is empty.
    expect(clientAddress(forwarded('6.6.6.6, 198.51.100.7'), counting, 1)).toBe('198.51.100.7')
    expect(asked).toBe(1)
    expect(clientAddress(forwarded('198.51.100.1'), counting, 0)).toBe('10.0.0.2')
    expect(asked).toBe(2)
  })
})
