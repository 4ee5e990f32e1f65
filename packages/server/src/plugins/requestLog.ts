import { Elysia } from 'elysia'
import type { Logger } from '../log.ts'
import { loggedPath } from '../requestPath.ts'

/** What the log keeps of a request between its arrival and its answer. */
type Arrival = { id: string; at: number }

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
 * Echoes a request id in `X-Request-Id` and logs one JSON line per answered request: id, method, path (no query, task
 * ids redacted),
 * status and duration. Failures (5xx) are warnings, so LOG_LEVEL=warn keeps them alone.
 */
export function requestLog(logger: Logger) {
  return new Elysia({ name: 'request-log' })
    .onRequest(({ request, set }) => {
      const id = requestIdFor(request)
      set.headers['x-request-id'] = id
      arrivals.set(request, { id, at: performance.now() })
    })
    .onAfterResponse({ as: 'global' }, ({ request, set, responseValue }) => {
      const arrival = arrivals.get(request)
      const status = responseValue instanceof Response ? responseValue.status : Number(set.status ?? 200)
      const fields = {
        requestId: arrival?.id,
        method: request.method,
        path: loggedPath(request.url),
        status,
        ms: arrival ? Math.round((performance.now() - arrival.at) * 100) / 100 : undefined,
      }
      if (status >= 500) logger.warn('request failed', fields)
      else logger.info('request', fields)
    })
}
