import { Elysia } from 'elysia'
import type { Logger } from '../log.ts'

/** What the log keeps of a request between its arrival and its answer; `logged` once its line is written. */
type Arrival = { id: string; at: number; logger: Logger; logged: boolean }

const arrivals = new WeakMap<Request, Arrival>()

// A caller's own id is kept when it is short and plain, so it can be followed through proxies; anything else could
// forge log lines or carry a secret, and is replaced.
const CALLER_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** The id of a request: the one its X-Request-Id gave when acceptable, else a new UUID. */
function requestIdFor(request: Request): string {
  const given = request.headers.get('x-request-id')
  return given !== null && CALLER_ID.test(given) ? given : crypto.randomUUID()
}

/** The id the request log gave `request`, if it saw it. */
export function requestIdOf(request: Request): string | undefined {
  return arrivals.get(request)?.id
}

/**
 * Writes the log line of `request`, answered with `status`, once (later calls do nothing): at its response mapping, or
 * from the problem handler for answers Elysia maps without the routes' hooks (an unknown path's 404 or 405).
 */
export function logAnswer(request: Request, status: number): void {
  const arrival = arrivals.get(request)
  if (!arrival || arrival.logged) return
  arrival.logged = true
  arrival.logger.request({
    at: Date.now(),
    requestId: arrival.id,
    method: request.method,
    url: request.url,
    status,
    ms: Math.round((performance.now() - arrival.at) * 100) / 100,
  })
}

/**
 * Echoes a request id in `X-Request-Id` and logs one JSON line per answered request: id, method, path (no query, task
 * ids redacted), status and the time to the answer. Failures (5xx) are warnings, so LOG_LEVEL=warn keeps them alone.
 * The line is written from Elysia's response mapping, not from its after-response hook, which costs a scheduled
 * callback per request (bench/CHANGES.md).
 */
export function requestLog(logger: Logger) {
  return new Elysia({ name: 'request-log' })
    .onRequest(({ request, set }) => {
      const id = requestIdFor(request)
      set.headers['x-request-id'] = id
      arrivals.set(request, { id, at: performance.now(), logger, logged: false })
    })
    .mapResponse({ as: 'global' }, ({ request, set, responseValue }) => {
      logAnswer(request, responseValue instanceof Response ? responseValue.status : Number(set.status ?? 200))
      // Nothing mapped: the answer goes on as it is.
      return undefined
    })
}
