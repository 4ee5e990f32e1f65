import { afterEach, describe, expect, test } from 'bun:test'
import { gzipSync } from 'node:zlib'
import { createPublicClient, http } from 'viem'
import { inChainBudget } from '../ports/chainBudget.ts'
import { jsonRpcBatcher } from './jsonRpcBatcher.ts'

type Call = { jsonrpc: '2.0'; id: number; method: string; params: unknown[] }
type Handler = (calls: Call[], request: Request) => Response | Promise<Response>

const servers: { stop(force: boolean): void }[] = []
afterEach(() => {
  for (const server of servers.splice(0)) server.stop(true)
})

/** A JSON-RPC server on 127.0.0.1 answering with `handler`; it records each request's calls and headers. */
function rpcServer(handler: Handler) {
  const requests: { calls: Call[]; headers: Headers; url: string }[] = []
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const calls = (await request.json()) as Call[]
      requests.push({ calls, headers: request.headers, url: request.url })
      return handler(calls, request)
    },
  })
  servers.push(server)
  return { url: `http://127.0.0.1:${server.port}/rpc`, requests }
}

/** Answers each call its method and first parameter, in reverse order. */
const echo: Handler = (calls) =>
  Response.json(
    calls
      .map(({ id, method, params }) => ({ jsonrpc: '2.0', id, result: `${method}:${params[0]}` }))
      .reverse(),
  )

/** The error `work` rejects with. */
async function rejection(work: Promise<unknown>): Promise<Error & { status?: number; cause?: unknown }> {
  try {
    await work
  } catch (error) {
    return error as Error
  }
  throw new Error('expected a rejection')
}

/** The error names down `error`'s cause chain. */
function names(error: unknown): string[] {
  const found: string[] = []
  for (let current = error; current instanceof Error; current = current.cause) found.push(current.name)
  return found
}

describe('jsonRpcBatcher', () => {
  test('behavior: the calls of one turn share one HTTP request, each answered its own result by id', async () => {
    const server = rpcServer(echo)
    const rpc = jsonRpcBatcher({ url: server.url, timeoutMs: 1_000, batchSize: 100 })
    const results = await Promise.all(['a', 'b', 'c'].map((param) => rpc.request('echo', [param])))
    expect(results).toEqual(['echo:a', 'echo:b', 'echo:c'])
    expect(server.requests).toHaveLength(1)
    expect(server.requests[0]?.calls.map(({ jsonrpc, id }) => ({ jsonrpc, id }))).toEqual([
      { jsonrpc: '2.0', id: 0 },
      { jsonrpc: '2.0', id: 1 },
      { jsonrpc: '2.0', id: 2 },
    ])
    expect(server.requests[0]?.headers.get('content-type')).toBe('application/json')
  })

  test('behavior: calls made across awaits of the same turn (its microtasks) still share one HTTP request', async () => {
    const server = rpcServer(echo)
    const rpc = jsonRpcBatcher({ url: server.url, timeoutMs: 1_000, batchSize: 100 })
    const calls: Promise<unknown>[] = []
    for (const param of ['a', 'b', 'c']) {
      calls.push(rpc.request('echo', [param]))
      await Promise.resolve() // e.g. an integrator awaiting a cached value between two calls
    }
    expect(await Promise.all(calls)).toEqual(['echo:a', 'echo:b', 'echo:c'])
    expect(server.requests.map((request) => request.calls.length)).toEqual([3])
  })

  test('behavior: a batch leaves at the end of its turn without waiting on a timer (a 0 ms timer waits ~1 ms in Bun)', async () => {
    const server = rpcServer(echo)
    const rpc = jsonRpcBatcher({ url: server.url, timeoutMs: 1_000, batchSize: 100 })
    // Timers frozen while the calls are made: one armed now would never fire, so the batch would never leave.
    const realSetTimeout = globalThis.setTimeout
    const armed: unknown[] = []
    globalThis.setTimeout = Object.assign((callback: unknown) => armed.push(callback), realSetTimeout)
    let calls: Promise<unknown>[]
    try {
      calls = ['a', 'b'].map((param) => rpc.request('echo', [param]))
    } finally {
      globalThis.setTimeout = realSetTimeout
    }
    expect(armed).toHaveLength(0)
    expect(await Promise.all(calls)).toEqual(['echo:a', 'echo:b'])
    expect(server.requests).toHaveLength(1)
  })

  test('behavior: a full batch leaves at once, the rest in another request; a later turn in its own', async () => {
    const server = rpcServer(echo)
    const rpc = jsonRpcBatcher({ url: server.url, timeoutMs: 1_000, batchSize: 2 })
    const five = await Promise.all([1, 2, 3, 4, 5].map((param) => rpc.request('echo', [param])))
    expect(five).toEqual(['echo:1', 'echo:2', 'echo:3', 'echo:4', 'echo:5'])
    expect(server.requests.map((request) => request.calls.length)).toEqual([2, 2, 1])
    expect(await rpc.request('echo', ['later'])).toBe('echo:later')
    expect(server.requests).toHaveLength(4)
  })

  test('behavior: credentials in the URL go as Basic authorization, not in the request line', async () => {
    const server = rpcServer(echo)
    const url = server.url.replace('http://', 'http://user:p%40ss@')
    const rpc = jsonRpcBatcher({ url, timeoutMs: 1_000, batchSize: 10 })
    expect(await rpc.request('echo', [1])).toBe('echo:1')
    expect(server.requests[0]?.headers.get('authorization')).toBe(`Basic ${btoa('user:p@ss')}`)
    expect(server.requests[0]?.url).toBe(server.url)
  })

  test('behavior: a gzip body is read and its size counted after decompression', async () => {
    const body = JSON.stringify([{ jsonrpc: '2.0', id: 0, result: 'x'.repeat(50_000) }])
    const gzipped = () =>
      new Response(gzipSync(body), {
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      })
    const server = rpcServer(gzipped)
    const roomy = jsonRpcBatcher({ url: server.url, timeoutMs: 1_000, batchSize: 10 })
    expect(await roomy.request('big', [])).toBe('x'.repeat(50_000))
    const tight = jsonRpcBatcher({
      url: server.url,
      timeoutMs: 1_000,
      batchSize: 10,
      maxResponseBytes: 10_000,
    })
    expect((await rejection(tight.request('big', []))).name).toBe('ResponseBodyTooLargeError')
  })

  test('error: a JSON-RPC error fails only its call, as viem names it by code', async () => {
    const server = rpcServer((calls) =>
      Response.json(
        calls.map(({ id, method }) =>
          method === 'bad'
            ? { jsonrpc: '2.0', id, error: { code: -32602, message: 'invalid params' } }
            : method === 'busy'
              ? { jsonrpc: '2.0', id, error: { code: -32005, message: 'limit exceeded' } }
              : { jsonrpc: '2.0', id, result: 'fine' },
        ),
      ),
    )
    const rpc = jsonRpcBatcher({ url: server.url, timeoutMs: 1_000, batchSize: 10 })
    const [good, bad, busy] = await Promise.allSettled([
      rpc.request('good', []),
      rpc.request('bad', []),
      rpc.request('busy', []),
    ])
    expect(good).toEqual({ status: 'fulfilled', value: 'fine' })
    expect(bad.status === 'rejected' && names(bad.reason)).toEqual([
      'InvalidParamsRpcError',
      'RpcRequestError',
    ])
    expect(busy.status === 'rejected' && names(busy.reason)[0]).toBe('LimitExceededRpcError')
  })

  test('error: one error for the whole batch, bare, alone in an array or with id null, fails every call', async () => {
    const refusal = { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch refused' } }
    for (const answer of [refusal, [refusal], [refusal, refusal]]) {
      const server = rpcServer(() => Response.json(answer))
      const rpc = jsonRpcBatcher({ url: server.url, timeoutMs: 1_000, batchSize: 10 })
      const settled = await Promise.allSettled([rpc.request('a', []), rpc.request('b', [])])
      for (const one of settled)
        expect(one.status === 'rejected' && names(one.reason)[0]).toBe('InvalidRequestRpcError')
    }
  })

  test('error: an answer that is no batch of answers, or misses a call, is a failed request', async () => {
    for (const answer of [{}, [{ jsonrpc: '2.0', id: 0, result: 'only one' }], 'not json at all']) {
      const server = rpcServer(() =>
        typeof answer === 'string' ? new Response(answer) : Response.json(answer),
      )
      const rpc = jsonRpcBatcher({ url: server.url, timeoutMs: 1_000, batchSize: 10 })
      const error = await rejection(Promise.all([rpc.request('a', []), rpc.request('b', [])]))
      expect(error.name).toBe('HttpRequestError')
      expect(error.status).toBeUndefined()
    }
  })

  test('error: HTTP failures keep their status, with a JSON-RPC error body mapped by its code', async () => {
    const plain = rpcServer(() => new Response('upstream down', { status: 503 }))
    const plainError = await rejection(
      jsonRpcBatcher({ url: plain.url, timeoutMs: 1_000, batchSize: 10 }).request('a', []),
    )
    expect(plainError).toMatchObject({ name: 'HttpRequestError', status: 503 })
    expect(plainError.message).toContain('upstream down')
    const limited = rpcServer(() =>
      Response.json(
        { jsonrpc: '2.0', id: 0, error: { code: -32005, message: 'slow down' } },
        { status: 429 },
      ),
    )
    const limitedError = await rejection(
      jsonRpcBatcher({ url: limited.url, timeoutMs: 1_000, batchSize: 10 }).request('a', []),
    )
    expect(names(limitedError)).toEqual(['LimitExceededRpcError', 'RpcRequestError'])
    expect((limitedError.cause as { status?: number }).status).toBe(429)
  })

  test('error: a body past maxResponseBytes is refused, by its length or as it streams', async () => {
    const big = JSON.stringify([{ jsonrpc: '2.0', id: 0, result: 'x'.repeat(20_000) }])
    const sized = rpcServer(() => new Response(big, { headers: { 'content-type': 'application/json' } }))
    const streamed = rpcServer(
      () =>
        new Response(
          new ReadableStream({
            start(controller) {
              for (let start = 0; start < big.length; start += 1_000)
                controller.enqueue(new TextEncoder().encode(big.slice(start, start + 1_000)))
              controller.close()
            },
          }),
        ),
    )
    for (const server of [sized, streamed]) {
      const rpc = jsonRpcBatcher({
        url: server.url,
        timeoutMs: 1_000,
        batchSize: 10,
        maxResponseBytes: 10_000,
      })
      expect((await rejection(rpc.request('big', []))).name).toBe('ResponseBodyTooLargeError')
      const roomy = jsonRpcBatcher({ url: server.url, timeoutMs: 1_000, batchSize: 10 })
      expect(await roomy.request('big', [])).toBe('x'.repeat(20_000))
    }
  })

  test('error: no answer, or a body that stalls after its headers, is a TimeoutError after timeoutMs', async () => {
    const silent = rpcServer(() => new Promise<Response>(() => {}))
    const stalling = rpcServer(
      () =>
        new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(new TextEncoder().encode('[{"jsonrpc":"2.0",'))
            },
          }),
        ),
    )
    for (const server of [silent, stalling]) {
      const started = performance.now()
      const error = await rejection(
        jsonRpcBatcher({ url: server.url, timeoutMs: 150, batchSize: 10 }).request('a', []),
      )
      expect(error.name).toBe('TimeoutError')
      expect(performance.now() - started).toBeGreaterThanOrEqual(140)
      expect(performance.now() - started).toBeLessThan(1_000)
    }
  })

  test("behavior: inside a request's chain budget a call to a frozen node is given up when the budget is spent, its HTTP request dropped, and the request's next call never sent", async () => {
    const dropped = Promise.withResolvers<void>()
    const server = rpcServer((_calls, request) => {
      request.signal.addEventListener('abort', () => dropped.resolve())
      return new Promise<Response>(() => {})
    })
    // Each call's own bound is ten times the request's budget. The budget leaves the first call a wide margin to reach
    // the node (at 100 ms, two CI runs at once saw it spent before the request arrived).
    const rpc = jsonRpcBatcher({ url: server.url, timeoutMs: 10_000, batchSize: 100 })
    const [first, next] = await inChainBudget(1_000, async () => [
      await rejection(rpc.request('eth_blockNumber', [])),
      await rejection(rpc.request('eth_getTransactionReceipt', ['0x01'])),
    ])
    expect([first.name, next.name]).toEqual(['TimeoutError', 'TimeoutError'])
    // One call reached the node; the second, made after the budget was spent, was not sent.
    expect(server.requests.map((request) => request.calls.map((call) => call.method))).toEqual([
      ['eth_blockNumber'],
    ])
    await dropped.promise
  })

  test('error: a closed port is an HttpRequestError without a status, as viem reports it', async () => {
    const server = rpcServer(echo)
    const { url } = server
    for (const one of servers.splice(0)) one.stop(true)
    const ours = await rejection(
      jsonRpcBatcher({ url, timeoutMs: 500, batchSize: 10 }).request('eth_blockNumber', []),
    )
    const viems = await rejection(
      createPublicClient({ transport: http(url, { batch: true, retryCount: 0, timeout: 500 }) }).request({
        method: 'eth_blockNumber',
      }),
    )
    expect(names(ours)[0]).toBe('HttpRequestError')
    expect(names(ours)[0]).toBe(names(viems)[0] as string)
    expect(ours.status).toBeUndefined()
  })
})
