import { describe, expect, test } from 'bun:test'
import { StoreUnavailableError } from '@agentmarket/core'
import { Elysia } from 'elysia'
import { jsonLogger } from '../log.ts'
import { problems } from './problems.ts'
import { requestIdOf, requestLog } from './requestLog.ts'

type Line = {
  level: string
  msg: string
  requestId?: string
  path?: string
  status?: number
  ms?: number
  code?: string
  cause?: string
}

/** An app with the request log and the problem handler as createApp installs them, and the lines it wrote. */
function loggedApp() {
  const written: string[] = []
  const logger = jsonLogger('info', (text) => written.push(text))
  let seenInside: string | undefined
  const app = new Elysia()
    .use(requestLog(logger))
    .use(problems('http://market.example', logger))
    .get('/ok', () => 'ok')
    .get('/sync', () => new Response('made here', { status: 202 }))
    .get('/asks', ({ request }) => {
      seenInside = requestIdOf(request)
      return 'asked'
    })
    .get('/boom', () => {
      throw new Error('database fell over')
    })
    .get('/down', () => {
      const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { code: 'ECONNREFUSED' })
      throw new StoreUnavailableError('unchanged', { cause: refused })
    })
  const lines = () => {
    logger.flush(true)
    return written
      .join('')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Line)
  }
  return { app, lines, seenInside: () => seenInside }
}

const get = (path: string, headers: Record<string, string> = {}) =>
  new Request(`http://market.example${path}`, { headers })

describe('requestLog', () => {
  test('behavior: every answer (a route, an unknown path, a failure) has an id and one line with its status', async () => {
    const { app, lines } = loggedApp()
    const answers = await Promise.all(
      ['/ok', '/sync', '/no-such-path', '/boom'].map((p) => app.handle(get(p))),
    )
    expect(answers.map((answer) => answer.status)).toEqual([200, 202, 404, 500])
    const written = lines()
    for (const answer of answers) {
      const id = answer.headers.get('x-request-id') ?? ''
      expect(id).toMatch(/^[0-9a-f-]{36}$/)
      const requestLines = written.filter((line) => line.requestId === id && line.path !== undefined)
      expect(requestLines).toHaveLength(1)
      expect(requestLines[0]?.status).toBe(answer.status)
      expect(requestLines[0]?.ms).toBeGreaterThanOrEqual(0)
    }
    expect(new Set(answers.map((answer) => answer.headers.get('x-request-id'))).size).toBe(4)
  })

  test('behavior: the id an error line or a handler asked for is the one the answer and its line carry', async () => {
    const { app, lines, seenInside } = loggedApp()
    const failed = await app.handle(get('/boom'))
    const asked = await app.handle(get('/asks'))
    const written = lines()
    const failedId = failed.headers.get('x-request-id')
    const errorLine = written.find((line) => line.msg === 'unhandled error')
    expect(errorLine?.requestId).toBe(failedId as string)
    expect(written.find((line) => line.msg === 'request failed')).toMatchObject({
      level: 'warn',
      requestId: failedId,
      status: 500,
    })
    expect(seenInside()).toBe(asked.headers.get('x-request-id') as string)
  })

  test('behavior: a dependency fault answered 503 is one warning naming its code and its driver code, not an error line', async () => {
    const { app, lines } = loggedApp()
    const answer = await app.handle(get('/down'))
    expect(answer.status).toBe(503)
    const written = lines()
    expect(written.filter((line) => line.level === 'error')).toEqual([])
    expect(written.find((line) => line.msg === 'dependency fault')).toMatchObject({
      level: 'warn',
      requestId: answer.headers.get('x-request-id') as string,
      code: 'database_unavailable',
      cause: 'ECONNREFUSED',
    })
    expect(JSON.stringify(written)).not.toContain('10.0.0.5')
  })

  test('attack: a caller id is kept only when short and plain; one that could forge a line is replaced', async () => {
    const { app, lines } = loggedApp()
    const kept = await app.handle(get('/ok', { 'x-request-id': 'proxy-trace.42:a_b' }))
    const forged = '"},{"level":"error","msg":"forged'
    const replaced = await app.handle(get('/ok', { 'x-request-id': forged }))
    const long = await app.handle(get('/ok', { 'x-request-id': 'a'.repeat(129) }))
    expect(kept.headers.get('x-request-id')).toBe('proxy-trace.42:a_b')
    expect(replaced.headers.get('x-request-id')).not.toContain('forged')
    expect(long.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    const written = lines()
    expect(written.filter((line) => line.level === 'error')).toEqual([])
    expect(written.map((line) => line.msg)).toEqual(['request', 'request', 'request'])
  })

  test('behavior: a request whose handling fails outside the error handler is still logged, as failed', async () => {
    const written: string[] = []
    const logger = jsonLogger('info', (text) => written.push(text))
    const app = new Elysia()
      .use(requestLog(logger))
      .onError(() => {
        throw new Error('the error handler failed too')
      })
      .get('/boom', () => {
        throw new Error('first failure')
      })
    const outcome = await Promise.resolve(app.handle(get('/boom'))).then(
      (answer) => answer.status,
      () => 'rejected',
    )
    logger.flush(true)
    const lines = written
      .join('')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Line)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({ level: 'warn', msg: 'request failed', path: '/boom', status: 500 })
    // Elysia rejects when its error handler throws; Bun then answers with its own 500.
    expect(outcome).toBe('rejected')
  })
})
