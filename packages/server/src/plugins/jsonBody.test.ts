import { describe, expect, test } from 'bun:test'
import { TEST_BASE_URL, testApp } from '../testing/http.ts'
import { recordingRateLimits } from '../testing/rateLimits.ts'

/** A POST to `path` of `text`, framed by its length as over HTTP, counting how often its body's stream is asked for. */
function countedPost(path: string, text: string) {
  const request = new Request(`${TEST_BASE_URL}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) },
    body: text,
  })
  const counted = { request, streams: 0 }
  const stream = Object.getOwnPropertyDescriptor(Request.prototype, 'body')?.get
  Object.defineProperty(request, 'body', {
    get() {
      counted.streams += 1
      return stream?.call(request)
    },
  })
  return counted
}

describe('the JSON body of a write', () => {
  test("work: a write of the route table reads its body whole, never asking for the body's stream", async () => {
    const { app } = await testApp()
    const post = countedPost('/api/agents/register', JSON.stringify({ name: 'streamless' }))
    const answer = await app.handle(post.request)
    expect(answer.status).toBe(200)
    expect(post.streams).toBe(0)
  })

  test('behavior: a write is charged to its rate limit before its body is read: a malformed one costs its token', async () => {
    const { rateLimits, spent } = recordingRateLimits()
    const { call } = await testApp(undefined, { rateLimits })
    const refused = await call('POST', '/api/agents/register', { body: '{"name":' })
    expect(refused.status).toBe(400)
    expect(refused.json.code).toBe('invalid_json')
    expect(spent.map((spend) => spend.bucket)).toContain('register_attempt')
  })

  test('behavior: a body that is not a JSON object, or not JSON, is refused as before', async () => {
    const { call } = await testApp()
    const array = await call('POST', '/api/agents/register', { body: '[1]' })
    expect([array.status, array.json.code]).toEqual([400, 'invalid_body'])
    const text = await call('POST', '/api/agents/register', {
      body: 'name=x',
      headers: { 'content-type': 'text/plain' },
    })
    expect([text.status, text.json.code]).toEqual([415, 'unsupported_media_type'])
  })
})
