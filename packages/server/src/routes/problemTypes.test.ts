import { describe, expect, test } from 'bun:test'
import { ERROR_CODES, type ErrorCode } from '@agentmarket/core'
import { expectProblemShape, TEST_BASE_URL, testApp } from '../testing/http.ts'

describe('problem types', () => {
  test('behavior: every code of the catalog has a type URI that documents it: JSON for clients, a page for browsers', async () => {
    const { call } = await testApp()
    for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) {
      const doc = await call('GET', `/problems/${code}`)
      expect(doc.status, code).toBe(200)
      expect(doc.json).toEqual({ code, status: ERROR_CODES[code], help: expect.any(String) })
      expect(doc.json.help.length, code).toBeGreaterThan(20)
      const page = await call('GET', `/problems/${code}`, { headers: { accept: 'text/html' } })
      expect(page.headers.get('content-type'), code).toContain('text/html')
      expect(page.text).toContain(`<code>${code}</code>`)
    }
    expect((await call('GET', '/problems')).json).toHaveLength(Object.keys(ERROR_CODES).length)
    expectProblemShape(await call('GET', '/problems/no_such_code'), 404, 'not_found')
  })

  test("behavior: a problem's own type URI is one of those pages", async () => {
    const { call } = await testApp()
    const problem = await call('POST', '/api/agents/register', { body: { nme: 'x' } })
    expect(problem.json.type).toBe(`${TEST_BASE_URL}/problems/invalid_body`)
    const typePath = new URL(problem.json.type).pathname
    expect((await call('GET', typePath)).json.code).toBe('invalid_body')
  })

  test('error: a known path asked with another method is 405 with Allow, an unknown path still 404', async () => {
    const { call } = await testApp()
    for (const [method, path, allow] of [
      ['DELETE', '/api/agents/register', 'POST'],
      ['GET', '/api/agents/register', 'POST'],
      ['PATCH', '/api/agents/scout', 'PUT'],
      ['POST', '/api/community/health', 'GET'],
      ['PUT', '/api/v1/feed/live/', 'GET'],
    ] as const) {
      const answer = await call(method, path)
      expectProblemShape(answer, 405, 'method_not_allowed')
      expect(answer.headers.get('allow'), `${method} ${path}`).toContain(allow)
      expect(answer.json.detail).toContain(allow)
    }
    expectProblemShape(await call('DELETE', '/api/no-such-thing'), 404, 'not_found')
    expectProblemShape(await call('GET', '/api/agents/scout/nothing'), 404, 'not_found')
  })
})
