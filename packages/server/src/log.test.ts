import { describe, expect, test } from 'bun:test'
import { closeSync, mkdtempSync, openSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HttpRequestError } from 'viem'
import { jsonLogger, withoutUrlSecrets, writesAtOnce } from './log.ts'
import { loggedPath } from './requestPath.ts'

describe('jsonLogger', () => {
  test('behavior: an error is logged without the values its message quotes, and cut short', () => {
    const lines: string[] = []
    const logger = jsonLogger('warn', (text) => lines.push(text))
    const failure = new Error(
      `fts5: syntax error near "search-secret-word" in 'params-secret' ${'x'.repeat(500)}`,
    )
    logger.error('unhandled error', { method: 'GET' }, failure)
    logger.flush(true)
    const line = JSON.parse(lines.join('').trim()) as { error: string; stack: string }
    expect(line.error).toStartWith('Error: fts5: syntax error near "…" in "…"')
    expect(line.error.length).toBeLessThan(320)
    expect(lines.join('')).not.toContain('secret')
    expect(line.stack).toContain('at ')
  })

  test("attack: a chain client's error names its RPC URL: no key in its user, path or query reaches the log", () => {
    const lines: string[] = []
    const logger = jsonLogger('warn', (text) => lines.push(text))
    const rpc = 'https://rpcuser:rpcpass@rpc.example:8545/v2/SECRETAPIKEY123?key=QSECRET'
    const cause = new HttpRequestError({ url: rpc, body: { method: 'eth_getTransactionReceipt' } })
    logger.error('unhandled error', {}, new Error('chain unreachable', { cause }))
    logger.flush(true)
    const text = lines.join('')
    for (const secret of ['SECRETAPIKEY123', 'QSECRET', 'rpcpass', 'rpcuser'])
      expect(text).not.toContain(secret)
    expect(text).toContain('https://rpc.example:8545/…')
    expect(withoutUrlSecrets('see http://host.example/ and wss://node.example')).toBe(
      'see http://host.example and wss://node.example',
    )
  })

  test('behavior: a line is the JSON of its fields, one line each, whatever the values hold', () => {
    const lines: string[] = []
    const logger = jsonLogger('info', (text) => lines.push(text))
    const fields = {
      path: '/a"b\\c\n{"forged":1}\u2028\u0000é😀',
      status: 200,
      ms: 1.25,
      gone: undefined,
      none: null,
      yes: true,
      nan: Number.NaN,
      '"odd key"': 'v',
    }
    logger.info('request "quoted"', fields)
    logger.flush(true)
    const text = lines.join('')
    expect(text.split('\n')).toHaveLength(2)
    const { time, ...line } = JSON.parse(text)
    expect(Date.parse(time)).not.toBeNaN()
    expect(line).toEqual(JSON.parse(JSON.stringify({ level: 'info', msg: 'request "quoted"', ...fields })))
    expect(Object.keys(line)).toEqual([
      'level',
      'msg',
      'path',
      'status',
      'ms',
      'none',
      'yes',
      'nan',
      '"odd key"',
    ])
  })
})

describe('jsonLogger request lines', () => {
  test('behavior: kept as their parts, written in order with the other lines, the path without query or task id', () => {
    const lines: string[] = []
    const logger = jsonLogger('info', (text) => lines.push(text))
    const at = Date.parse('2026-11-25T12:00:00.000Z')
    const id = `task_${'cd'.repeat(16)}`
    logger.info('listening', { port: 1 })
    logger.request({
      at,
      requestId: 'r-1',
      method: 'GET',
      url: `http://h/api/agents/a/tasks/${id}?secret=1`,
      status: 200,
      ms: 0.5,
    })
    logger.warn('slow', { ms: 9 })
    logger.request({
      at: at + 1,
      requestId: 'r-2',
      method: 'POST',
      url: 'http://h/api/agents/register',
      status: 201,
      ms: 2,
    })
    expect(lines).toEqual([])
    logger.flush(true)
    const text = lines.join('')
    expect(text).not.toContain(id)
    expect(text).not.toContain('secret')
    const written = text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    expect(written.map((line) => line.msg)).toEqual(['listening', 'request', 'slow', 'request'])
    expect(written[1]).toEqual({
      time: '2026-11-25T12:00:00.000Z',
      level: 'info',
      msg: 'request',
      requestId: 'r-1',
      method: 'GET',
      path: '/api/agents/a/tasks/{id}',
      status: 200,
      ms: 0.5,
    })
    expect(written[3].time).toBe('2026-11-25T12:00:00.001Z')
  })

  test('behavior: a request line writes its ms as JSON.stringify does, and a path as loggedPath gives it, each time', () => {
    const lines: string[] = []
    const logger = jsonLogger('info', (text) => lines.push(text))
    const hundredths = Array.from({ length: 2_000 }, (_, n) => Math.round(n * n * 7.3) / 100)
    const odd = [
      0,
      1,
      0.5,
      3.07,
      0.29,
      1.005,
      1 / 3,
      -1.25,
      1e12 + 0.5,
      2 ** 31,
      Number.NaN,
      Number.POSITIVE_INFINITY,
    ]
    const values = [...hundredths, ...odd]
    const urls = [
      'http://h/api/agents/a/tasks/SECRET-1?x=1',
      'http://h/api/agents/a',
      'http://h/api/agents/a/TASKS/SECRET-2',
    ]
    values.forEach((ms, n) => {
      logger.request({
        at: 0,
        requestId: 'r',
        method: 'GET',
        url: urls[n % urls.length] as string,
        status: 200,
        ms,
      })
    })
    logger.flush(true)
    const written = lines.join('').trim().split('\n')
    expect(written).toHaveLength(values.length)
    written.forEach((line, n) => {
      expect(line.slice(line.indexOf('"ms":') + 5, -1)).toBe(JSON.stringify(values[n]))
      expect(JSON.parse(line).path).toBe(loggedPath(urls[n % urls.length] as string))
    })
    expect(lines.join('')).not.toContain('SECRET')
  })

  test('attack: a request line stays one line of JSON whatever its id, method and path hold', () => {
    const lines: string[] = []
    const logger = jsonLogger('info', (text) => lines.push(text))
    const odd = '"},{"level":"error"}\\\n\u2028\u0000é😀'
    logger.request({
      at: 0,
      requestId: odd,
      method: `GET${odd}`,
      url: `http://h/p${odd}`,
      status: 200,
      ms: 1,
    })
    logger.flush(true)
    const text = lines.join('')
    expect(text.trim().split('\n')).toHaveLength(1)
    expect(JSON.parse(text)).toMatchObject({ requestId: odd, method: `GET${odd}`, path: `/p${odd}` })
  })

  test('behavior: at warn level only a failed request (5xx) is kept, as a warning; off keeps none', () => {
    const lines: string[] = []
    const logger = jsonLogger('warn', (text) => lines.push(text))
    logger.request({ at: 0, requestId: 'r', method: 'GET', url: 'http://h/', status: 200, ms: 1 })
    logger.request({ at: 0, requestId: 'f', method: 'GET', url: 'http://h/x', status: 503, ms: 1 })
    logger.flush(true)
    const written = lines
      .join('')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    expect(written).toHaveLength(1)
    expect(written[0]).toMatchObject({
      level: 'warn',
      msg: 'request failed',
      requestId: 'f',
      status: 503,
      path: '/x',
    })
    const none: string[] = []
    const off = jsonLogger('off', (text) => none.push(text))
    off.request({ at: 0, requestId: 'f', method: 'GET', url: 'http://h/x', status: 503, ms: 1 })
    off.flush(true)
    expect(none).toEqual([])
  })
})

describe('standard output', () => {
  // A child logging 3,000 request lines and a non-ASCII one with the default writer, then stopping in order.
  const CHILD = `
    const { jsonLogger, writesAtOnce } = await import(${JSON.stringify(join(import.meta.dir, 'log.ts'))})
    console.error(writesAtOnce(1))
    const log = jsonLogger('info')
    for (let n = 0; n < 3000; n++)
      log.request({ at: 0, requestId: 'r' + n, method: 'GET', url: 'http://h/x', status: 200, ms: 1 })
    log.info('café ☕ done')
    log.flush(true)`
  const logged = (text: string) =>
    text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
  const expectAll = (lines: { requestId?: string; msg: string }[]) => {
    expect(lines.length).toBe(3001)
    expect(lines.slice(0, 3000).map((line) => line.requestId)).toEqual(
      Array.from({ length: 3000 }, (_, n) => `r${n}`),
    )
    expect(lines[3000]?.msg).toBe('café ☕ done')
  }

  test('behavior: a file gets its lines written at once, every one of them, in order', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'agentmarket-log-')), 'out.log')
    const fd = openSync(file, 'w')
    const child = Bun.spawn(['bun', '-e', CHILD], { stdout: fd, stderr: 'pipe' })
    const chosen = await new Response(child.stderr).text()
    expect(await child.exited).toBe(0)
    closeSync(fd)
    expect(chosen.trim()).toBe('true')
    expectAll(logged(readFileSync(file, 'utf8')))
  })

  test('behavior: a pipe keeps its queue (a reader may be slow), and still gets every line', async () => {
    const child = Bun.spawn(['bun', '-e', CHILD], { stdout: 'pipe', stderr: 'pipe' })
    const [text, chosen] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
    ])
    expect(await child.exited).toBe(0)
    expect(chosen.trim()).toBe('false')
    expectAll(logged(text))
  })

  test('behavior: /dev/null and files are written at once, a closed descriptor is not', () => {
    const fd = openSync('/dev/null', 'w')
    expect(writesAtOnce(fd)).toBe(true)
    closeSync(fd)
    expect(writesAtOnce(fd)).toBe(false)
  })
})

describe('loggedPath', () => {
  test('behavior: the query is dropped and whatever follows /tasks/ is redacted, in any case', () => {
    const id = `task_${'ab'.repeat(16)}`
    expect(loggedPath(`http://h/api/agents/scout/tasks/${id}?x=1`)).toBe('/api/agents/scout/tasks/{id}')
    expect(loggedPath(`http://h/api/v1/agents/scout/TASKS/${id}/complete`)).toBe(
      '/api/v1/agents/scout/TASKS/{id}/complete',
    )
    expect(loggedPath('http://h/api/agents/scout/tasks')).toBe('/api/agents/scout/tasks')
    // A request without a usable Host: Bun gives its URL as the path alone.
    expect(loggedPath(`/api/agents/scout/tasks/${id}?x=1`)).toBe('/api/agents/scout/tasks/{id}')
  })
})
