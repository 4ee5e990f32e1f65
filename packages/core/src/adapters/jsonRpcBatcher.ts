import { HttpRequestError, ResponseBodyTooLargeError, RpcRequestError, TimeoutError } from 'viem'
import { buildRequest } from 'viem/utils'
import { chainBudgetExpiry, chainCallTimeout } from '../ports/chainBudget.ts'

/** Options of a JSON-RPC batcher. */
export type JsonRpcBatcherOptions = {
  /** The endpoint; credentials in it (`user:password@`) are sent as Basic authorization, as viem sends them. */
  url: string
  /** Milliseconds one HTTP request, its body included, may take. */
  timeoutMs: number
  /** The most calls sent in one HTTP request. */
  batchSize: number
  /** The largest response body read, in bytes. @default 10_485_760 (viem's) */
  maxResponseBytes?: number
}

/** JSON-RPC over HTTP, every call made in the same turn of the event loop sent in one batch. */
export type JsonRpcBatcher = {
  /** The call's result as the node sent it (no formatting); rejects with viem's error for it. */
  request(method: string, params: readonly unknown[]): Promise<unknown>
}

type Call = {
  method: string
  params: readonly unknown[]
  resolve(result: unknown): void
  reject(error: unknown): void
  /** Answered, or given up when its request's chain budget was spent. */
  settled: boolean
  /** Runs once the call is settled: its batch drops its HTTP request when no call waits on it any more. */
  whenSettled?: () => void
}
type Body = { jsonrpc: '2.0'; id: number; method: string; params: readonly unknown[] }[]
type RpcErrorBody = { code: number; message: string; data?: unknown }

const isRpcError = (value: unknown): value is { error: RpcErrorBody } => {
  const error = (value as { error?: Partial<RpcErrorBody> } | null)?.error
  return typeof error?.code === 'number' && typeof error.message === 'string'
}

/**
 * A JSON-RPC client that packs the calls of one event-loop turn into batches of up to `batchSize` (one HTTP request
 * each) and answers each call its raw result. Leaner than viem's http transport on large batches: its scheduler
 * copies the queue for every call (quadratic in the batch), and it reads the body chunk by chunk into a string.
 * What viem gives stays: the timeout over the request and its body, a bound on the body (also after decompression),
 * no retries, and viem's errors, mapped by viem (`TimeoutError`, `HttpRequestError` with its status,
 * `RpcRequestError`, and a JSON-RPC error by its code, e.g. `InvalidParamsRpcError`, `LimitExceededRpcError`).
 * @example const rpc = jsonRpcBatcher({ url, timeoutMs: 10_000, batchSize: 1_000 }); await rpc.request('eth_blockNumber', [])
 */
export function jsonRpcBatcher(options: JsonRpcBatcherOptions): JsonRpcBatcher {
  const { url, headers } = endpoint(options.url)
  const { timeoutMs, batchSize, maxResponseBytes = 10_485_760 } = options
  let queue: Call[] = []
  let pending: ReturnType<typeof setImmediate> | undefined

  const flush = () => {
    clearImmediate(pending)
    pending = undefined
    const calls = queue
    queue = []
    void send(calls)
  }

  /** Sends one batch and settles each of its calls; never rejects. */
  async function send(queued: Call[]): Promise<void> {
    const calls = queued.filter((call) => !call.settled)
    if (calls.length === 0) return
    // Given up by every caller (their chain budgets spent), the request is dropped: its connection closes then.
    const dropped = new AbortController()
    let waiting = calls.length
    for (const call of calls)
      call.whenSettled = () => {
        waiting -= 1
        if (waiting === 0) dropped.abort()
      }
    const body: Body = calls.map(({ method, params }, id) => ({ jsonrpc: '2.0', id, method, params }))
    let answers: (Answer | undefined)[]
    try {
      answers = answersOf(await post(body, dropped.signal), body, url)
    } catch (error) {
      for (const call of calls) call.reject(await viemError(error, call))
      return
    }
    for (const [id, call] of calls.entries()) {
      const answer = answers[id]
      if (!answer) {
        const cause = new Error(`The JSON-RPC batch answered no call with id ${id}.`)
        call.reject(await viemError(new HttpRequestError({ body, cause, url }), call))
      } else if (answer.error) {
        const error = new RpcRequestError({
          body: { method: call.method, params: call.params },
          error: answer.error as RpcErrorBody,
          url,
        })
        call.reject(await viemError(error, call))
      } else call.resolve(answer.result)
    }
  }

  /** The parsed answer of one HTTP request; throws viem's error when it fails, times out or says it failed. */
  function post(body: Body, dropped: AbortSignal): Promise<unknown> {
    return withDeadline(
      timeoutMs,
      () => new TimeoutError({ body, url }),
      async (signal) => {
        let response: Response
        let data: unknown
        try {
          response = await fetch(url, {
            method: 'POST',
            headers,
            body: JSON.stringify(body),
            signal: AbortSignal.any([signal, dropped]),
          })
          data = await answerOf(response, maxResponseBytes)
        } catch (error) {
          if (error instanceof ResponseBodyTooLargeError) throw error
          throw new HttpRequestError({ body, cause: error as Error, url })
        }
        if (response.ok) return data
        const { status, statusText, headers: responseHeaders } = response
        // A server that refuses a whole batch answers one error, bare or in a one-element array (geth).
        const error = Array.isArray(data) && data.length === 1 ? data[0] : data
        if (isRpcError(error))
          throw new RpcRequestError({ body, error: error.error, headers: responseHeaders, status, url })
        const details = JSON.stringify((data as { error?: unknown } | null)?.error) || statusText
        throw new HttpRequestError({ body, details, headers: responseHeaders, status, url })
      },
    )
  }

  return {
    request: (method, params) =>
      new Promise((resolve, reject) => {
        // The chain budget of the request making the call, read in its scope: once spent, the call is not sent; when
        // it ends before the call's own bound, the call is given up then (its batch may carry other requests' calls).
        const timeLeft = chainCallTimeout(timeoutMs)
        const givenUp = () => new TimeoutError({ body: { method, params }, url })
        if (timeLeft <= 0) return reject(givenUp())
        const call: Call = {
          method,
          params,
          settled: false,
          resolve: (result) => settle(call, () => resolve(result)),
          reject: (error) => settle(call, () => reject(error)),
        }
        if (timeLeft < timeoutMs) void chainBudgetExpiry()?.then(() => call.reject(givenUp()))
        queue.push(call)
        // A full batch leaves at once; the rest waits for the other calls of this turn (its microtasks included).
        // setImmediate, not setTimeout(0): Bun's 0 ms timer waits about 1 ms, which a one-call batch pays in full.
        if (queue.length >= batchSize) flush()
        else pending ??= setImmediate(flush)
      }),
  }
}

/** Settles `call` once (`how` resolves or rejects it), then tells its batch. */
function settle(call: Call, how: () => void): void {
  if (call.settled) return
  call.settled = true
  how()
  call.whenSettled?.()
}

/** One answer of a batch, as the node sent it. */
type Answer = { id?: unknown; result?: unknown; error?: unknown }

/**
 * The answers of a batch by call id. A node that refuses the whole batch answers one JSON-RPC error (bare, or alone
 * in an array), and an error it could not tie to a call comes with id null: either becomes the error of every call
 * left unanswered. Any other answer that is not an array of answers is a failed request.
 */
function answersOf(data: unknown, body: Body, url: string): (Answer | undefined)[] {
  const answers: (Answer | undefined)[] = new Array(body.length)
  if (Array.isArray(data) && data.length >= body.length) {
    let untied: Answer | undefined
    for (const answer of data as (Answer | null)[]) {
      const id = answer?.id
      if (typeof id === 'number' && Number.isInteger(id) && id >= 0 && id < body.length && !answers[id])
        answers[id] = answer as Answer
      else if (isRpcError(answer)) untied ??= answer
    }
    if (untied) for (let id = 0; id < body.length; id++) answers[id] ??= untied
    return answers
  }
  const whole: unknown = Array.isArray(data) && data.length === 1 ? data[0] : data
  if (!isRpcError(whole))
    throw new HttpRequestError({
      body,
      cause: new Error(`Expected ${body.length} responses to batch request.`),
      url,
    })
  return answers.fill(whole)
}

/** `error` as viem's transport would throw it for `call`: viem maps it (JSON-RPC errors by their code). */
function viemError(error: unknown, call: Call): Promise<unknown> {
  const failing = buildRequest(() => Promise.reject(error), { retryCount: 0 })
  return failing({ method: call.method, params: call.params } as never).then(
    () => error,
    (mapped: unknown) => mapped,
  )
}

/** `work`'s result, or `timeout()`'s error after `ms` (then `work`'s signal aborts the request and its body). */
function withDeadline<T>(
  ms: number,
  timeout: () => Error,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const controller = new AbortController()
    const timer = setTimeout(() => {
      reject(timeout())
      controller.abort()
    }, ms)
    work(controller.signal)
      .then(resolve, reject)
      .finally(() => clearTimeout(timer))
  })
}

/**
 * The response body parsed, refused past `maxBytes`; a failure's body that is not JSON comes back as `{ error: text }`.
 * A plain body of known length is parsed at once (by the runtime, from its bytes, when the answer is a success); a
 * compressed or chunked one is counted as it arrives, so a small compressed body cannot unfold into gigabytes.
 */
async function answerOf(response: Response, maxBytes: number): Promise<unknown> {
  const length = response.headers.get('content-length')
  if (length !== null && Number(length) > maxBytes)
    throw new ResponseBodyTooLargeError({ maxSize: maxBytes, size: Number(length) })
  const encoding = response.headers.get('content-encoding')
  const sized = length !== null && (!encoding || encoding === 'identity')
  if (sized && response.ok && response.body) return response.json()
  const text = !response.body
    ? ''
    : sized
      ? await response.text()
      : await streamedText(response.body, maxBytes)
  try {
    return JSON.parse(text || '{}')
  } catch (error) {
    if (response.ok) throw error
    return { error: text }
  }
}

/** A streamed body as text, refused as soon as it passes `maxBytes`. */
async function streamedText(body: ReadableStream<Uint8Array>, maxBytes: number): Promise<string> {
  const reader = body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      size += read.value.byteLength
      if (size > maxBytes) {
        await reader.cancel()
        throw new ResponseBodyTooLargeError({ maxSize: maxBytes, size })
      }
      chunks.push(read.value)
    }
  } finally {
    reader.releaseLock()
  }
  const bytes = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return new TextDecoder().decode(bytes)
}

/** The URL to post to and the headers to send: credentials in the URL move to a Basic authorization header. */
function endpoint(raw: string): { url: string; headers: Record<string, string> } {
  const headers: Record<string, string> = { 'Content-Type': 'application/json' }
  try {
    const parsed = new URL(raw)
    if (!parsed.username) return { url: parsed.toString(), headers }
    const credentials = `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`
    parsed.username = ''
    parsed.password = ''
    return { url: parsed.toString(), headers: { ...headers, Authorization: `Basic ${btoa(credentials)}` } }
  } catch {
    return { url: raw, headers }
  }
}
