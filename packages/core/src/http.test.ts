import { describe, expect, test } from 'bun:test'
import { answerResponse } from './actions/tasks/answers.ts'
import {
  ChainUnavailableError,
  MarketError,
  StorageFullError,
  StoreUnavailableError,
  UnauthorizedError,
} from './errors.ts'
import { bearerKey, problemResponse, readJsonObject, readLimited } from './http.ts'

const post = (
  body: BodyInit | null,
  headers: Record<string, string> = { 'content-type': 'application/json' },
) => new Request('http://localhost/api/x', { method: 'POST', body, headers })

/** The error `work` throws, as code and status. */
async function refusal(work: Promise<unknown>) {
  const error = await work.then(
    () => null,
    (thrown: unknown) => thrown,
  )
  if (!(error instanceof MarketError)) throw new Error(`expected a MarketError, got ${String(error)}`)
  return { code: error.code, status: error.status }
}

describe('readJsonObject', () => {
  test('behavior: a JSON object is read; no body is undefined', async () => {
    expect(await readJsonObject(post('{"a": 1}'))).toEqual({ a: 1 })
    expect(await readJsonObject(post(null))).toBeUndefined()
    expect(await readJsonObject(post('{}', { 'content-type': 'application/merge-patch+json' }))).toEqual({})
  })

  test('error: malformed JSON, a JSON value that is not an object, another media type, or over 64 KiB', async () => {
    expect(await refusal(readJsonObject(post('{"a":')))).toEqual({ code: 'invalid_json', status: 400 })
    expect(await refusal(readJsonObject(post('null')))).toEqual({ code: 'invalid_body', status: 400 })
    expect(await refusal(readJsonObject(post('[1]')))).toEqual({ code: 'invalid_body', status: 400 })
    expect(await refusal(readJsonObject(post('{}', { 'content-type': 'text/plain' })))).toEqual({
      code: 'unsupported_media_type',
      status: 415,
    })
    const large = `{"a":"${'x'.repeat(64 * 1024)}"}`
    expect(await refusal(readJsonObject(post(large)))).toEqual({ code: 'payload_too_large', status: 413 })
    const chunked = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 70; i++) controller.enqueue(new TextEncoder().encode('x'.repeat(1024)))
        controller.close()
      },
    })
    expect(await refusal(readJsonObject(post(chunked)))).toEqual({ code: 'payload_too_large', status: 413 })
  })
})

describe('readLimited, framed (a host that frames bodies by Content-Length)', () => {
  const kib = (count: number) => 'x'.repeat(count * 1024)
  const framed = (request: Request) => readLimited(request, undefined, { framed: true })

  test('behavior: a body declaring its length is read whole, the same bytes as streamed', async () => {
    const body = `{"a":"${kib(8)}"}`
    const declared = { 'content-type': 'application/json', 'content-length': String(body.length) }
    const bytes = await framed(post(body, declared))
    expect(new TextDecoder().decode(bytes)).toBe(body)
    expect(bytes).toEqual(await readLimited(post(body, declared)))
    expect((await framed(post(null))).byteLength).toBe(0)
  })

  test('attack: a length declared small on a larger body, a large declared length, or a chunked body past 64 KiB is 413', async () => {
    const lying = post(kib(100), { 'content-type': 'application/json', 'content-length': '10' })
    expect(await refusal(framed(lying))).toEqual({ code: 'payload_too_large', status: 413 })
    const declaredLarge = post(kib(1), {
      'content-type': 'application/json',
      'content-length': String(65 * 1024),
    })
    expect(await refusal(framed(declaredLarge))).toEqual({ code: 'payload_too_large', status: 413 })
    const chunked = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 70; i++) controller.enqueue(new TextEncoder().encode(kib(1)))
        controller.close()
      },
    })
    expect(await refusal(framed(post(chunked)))).toEqual({ code: 'payload_too_large', status: 413 })
  })
})

describe('bearerKey', () => {
  test('behavior: the key of a Bearer header, from a header value or a request', () => {
    expect(bearerKey('Bearer amk_1')).toBe('amk_1')
    expect(bearerKey('bearer   amk_1 ')).toBe('amk_1')
    expect(bearerKey(new Request('http://localhost/', { headers: { authorization: 'Bearer amk_2' } }))).toBe(
      'amk_2',
    )
  })

  test('error: other schemes, no header, or a key with spaces give no key', () => {
    expect(bearerKey('Basic dXNlcg==')).toBeUndefined()
    expect(bearerKey(undefined)).toBeUndefined()
    expect(bearerKey('Bearer a b')).toBeUndefined()
    expect(bearerKey(new Request('http://localhost/'))).toBeUndefined()
  })
})

describe('problemResponse', () => {
  const request = new Request('http://localhost/api/agents/a/heartbeat', { method: 'POST' })

  test('behavior: a 401 carries the challenge, a 503 its Retry-After, both as problem+json', async () => {
    const unauthorized = problemResponse(new UnauthorizedError(), request, 'https://market.example')
    expect(unauthorized.status).toBe(401)
    expect(unauthorized.headers.get('www-authenticate')).toBe('Bearer realm="agentmarket"')
    expect(unauthorized.headers.get('content-type')).toBe('application/problem+json')
    expect(await unauthorized.json()).toMatchObject({
      code: 'unauthorized',
      instance: '/api/agents/a/heartbeat',
    })
    const down = problemResponse(new ChainUnavailableError(), request, 'https://market.example')
    expect(down.status).toBe(503)
    expect(Number(down.headers.get('retry-after'))).toBeGreaterThan(0)
  })

  test('behavior: a 503 hiding an unexpected failure (its cause) is reported to the host; a plain outage is not', async () => {
    const reported: unknown[] = []
    const report = (error: unknown) => reported.push(error)
    const bug = new TypeError("Cannot read properties of undefined (reading 'logs')")
    const hidden = problemResponse(new ChainUnavailableError(undefined, { cause: bug }), request, 'x', report)
    expect(hidden.status).toBe(503)
    expect(await hidden.text()).not.toContain('logs')
    problemResponse(new ChainUnavailableError(), request, 'x', report)
    expect(reported).toHaveLength(1)
    expect((reported[0] as Error).cause).toBe(bug)
  })

  test('behavior: a database fault is a 503 (nothing changed, or outcome unknown) or a 507, each with Retry-After and without the driver error', async () => {
    const driver = new Error('connect ECONNREFUSED 127.0.0.1:5432 password=hunter2')
    const cases = [
      [
        new StoreUnavailableError('unchanged', { cause: driver }),
        503,
        'database_unavailable',
        'nothing changed',
      ],
      [new StoreUnavailableError('unknown', { cause: driver }), 503, 'outcome_unknown', 'Idempotency-Key'],
      [new StorageFullError({ cause: driver }), 507, 'storage_full', 'nothing changed'],
    ] as const
    for (const [error, status, code, says] of cases) {
      const response = problemResponse(error, request, 'x', () => {})
      expect(response.status).toBe(status)
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0)
      const text = await response.text()
      expect(JSON.parse(text)).toMatchObject({ code, status })
      expect(text).toContain(says)
      expect(text).not.toContain('hunter2')
    }
  })

  test('error: an unexpected error is a 500 that does not show its message', async () => {
    const original = console.error
    console.error = () => {}
    try {
      const response = problemResponse(new Error('secret detail'), request, 'https://market.example')
      expect(response.status).toBe(500)
      expect(await response.text()).not.toContain('secret detail')
    } finally {
      console.error = original
    }
  })
})

describe('answerResponse', () => {
  test('behavior: status, body and Retry-After of a pending answer; the replay mark of a replayed one', async () => {
    const body = {
      verified: false,
      state: 'pending',
      confirmations: 1,
      required: 3,
      rechecked: true,
    } as const
    const pending = answerResponse({ outcome: 'pending', status: 202, body, retryAfterSeconds: 4 })
    expect(pending.status).toBe(202)
    expect(pending.headers.get('retry-after')).toBe('4')
    expect(pending.headers.get('idempotent-replayed')).toBeNull()
    expect(await pending.json()).toEqual(body)
    const replayed = answerResponse({ outcome: 'replayed', status: 201, body: { id: 1 }, replayed: true })
    expect(replayed.status).toBe(201)
    expect(replayed.headers.get('idempotent-replayed')).toBe('true')
    expect(replayed.headers.get('retry-after')).toBeNull()
  })
})
