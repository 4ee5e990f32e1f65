import { retryAfterSeconds } from './errors.ts'

/** A fetch that takes a Request, as openapi-fetch and @x402/fetch call it. */
export type RequestFetch = (request: Request) => Promise<Response>

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const stop = () => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', stop)
      resolve()
    }, ms)
    signal?.addEventListener('abort', stop, { once: true })
  })
}

/**
 * Sends a request again, up to `retries` times, when the answer is 429 or 503 with a Retry-After of at most
 * `maxWaitSeconds`, after waiting that long. A write carries its Idempotency-Key on each attempt, so the server runs
 * it once (a 503 `outcome_unknown` asks exactly for this retry).
 */
export function retryingFetch(base: RequestFetch, retries: number, maxWaitSeconds: number): RequestFetch {
  return async (request) => {
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= retries
      const response = await base(last ? request : request.clone())
      if (last || (response.status !== 429 && response.status !== 503)) return response
      const wait = retryAfterSeconds(response.headers)
      if (wait === null || wait > maxWaitSeconds) return response
      await response.body?.cancel()
      await sleep(wait * 1000, request.signal)
    }
  }
}

/** A fresh Idempotency-Key (a random UUID: Node.js 20+, Bun, Deno and browsers have `crypto.randomUUID`). */
export function newIdempotencyKey(): string {
  return crypto.randomUUID()
}
