import { Elysia } from 'elysia'
import type { Logger } from '../log.ts'

// Ids asked for while a request is handled (an error line, an MCP log line); the answer then carries the same one.
const ids = new WeakMap<Request, string>()

// A caller's own id is kept when it is short and plain, so it can be followed through proxies; anything else could
// forge log lines or carry a secret, and is replaced.
const CALLER_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** The id of a request: the one its X-Request-Id gave when acceptable, else a new UUID. */
function requestIdFor(request: Request): string {
  const given = request.headers.get('x-request-id')
  return given !== null && CALLER_ID.test(given) ? given : crypto.randomUUID()
}

/** The id of `request`, the one its answer's X-Request-Id and log line carry (made on first ask, then kept). */
export function requestIdOf(request: Request): string {
  let id = ids.get(request)
  if (id === undefined) {
    id = requestIdFor(request)
    ids.set(request, id)
  }
  return id
}

/** Queues the line of `request`, answered with `status` under the id `id`. */
function logLine(logger: Logger, request: Request, id: string, status: number, arrival: number): void {
  logger.request({
    at: Date.now(),
    requestId: id,
    method: request.method,
    url: request.url,
    status,
    ms: Math.round((performance.now() - arrival) * 100) / 100,
  })
}

/** Gives `answer` its request id and logs its line; anything but a Response (none is expected) goes on untouched. */
function answered(logger: Logger, request: Request, answer: unknown, arrival: number): unknown {
  if (!(answer instanceof Response)) return answer
  const id = ids.get(request) ?? requestIdFor(request)
  answer.headers.set('x-request-id', id)
  logLine(logger, request, id, answer.status, arrival)
  return answer
}

/** Logs a request whose handling failed outside Elysia's error handler (Bun answers it) as failed, then rethrows. */
function failed(logger: Logger, request: Request, error: unknown, arrival: number): never {
  logLine(logger, request, ids.get(request) ?? requestIdFor(request), 500, arrival)
  throw error
}

/** What Elysia calls to answer a request: its handler for the route or the app (`wrap` gives it). */
export type Handle = (request: Request) => unknown

/**
 * Echoes a request id in `X-Request-Id` and logs one JSON line per answered request: id, method, path (no query, task
 * ids redacted), status and the time to the answer. Failures (5xx) are warnings, so LOG_LEVEL=warn keeps them alone.
 * It wraps Elysia's whole handling of a request, unknown paths and errors included, instead of hooking into it: a
 * request hook and a response hook cost the hot reads several times what the wrapper does (bench/CHANGES.md).
 */
export function requestLog(logger: Logger) {
  const wrapper = (handle: Handle) => (request: Request) => {
    const arrival = performance.now()
    const answer = handle(request)
    return answer instanceof Promise
      ? answer.then(
          (settled) => answered(logger, request, settled, arrival),
          (error) => failed(logger, request, error, arrival),
        )
      : answered(logger, request, answer, arrival)
  }
  return new Elysia({ name: 'request-log' }).wrap(wrapper as never)
}
