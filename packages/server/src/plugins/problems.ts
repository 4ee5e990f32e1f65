import { MarketError, MethodNotAllowedError } from '@agentmarket/core'
import { problemResponse, requestPath, routeNotFound } from '@agentmarket/core/routes'
import { Elysia } from 'elysia'
import type { Logger } from '../log.ts'
import { sendAsBuilt } from '../routes/etag.ts'
import { EXPOSED_HEADERS } from './cors.ts'
import { requestIdOf } from './requestLog.ts'

/** The methods the app's routes take at a path (empty: no route has it). */
export type AllowedMethods = (pathname: string) => string[]

/** What `allowedMethods` reads of each route: Elysia's method and path (`:param`, `*`). */
type RouteFacts = { method: string; path: string }

/**
 * The methods `routes` take at each path, read once on first use (when every route is registered): a known path
 * asked with another method is a 405 with Allow, not a 404.
 */
export function allowedMethods(routes: () => readonly RouteFacts[]): AllowedMethods {
  let compiled: { method: string; pattern: RegExp }[] | undefined
  const compile = () =>
    routes()
      .filter((route) => route.method !== 'ALL')
      .map(({ method, path }) => {
        const source = path
          .split('/')
          .map((part) =>
            part === '*'
              ? '.*'
              : part.startsWith(':')
                ? '[^/]+'
                : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
          )
          .join('/')
        return { method, pattern: new RegExp(`^${source}$`) }
      })
  return (pathname) => {
    compiled ??= compile()
    const path = pathname.replace(/\/{2,}/g, '/').replace(/(.)\/$/, '$1')
    const methods = compiled.filter(({ pattern }) => pattern.test(path)).map(({ method }) => method)
    return [...new Set(methods)].sort()
  }
}

/** Unwraps Elysia's own errors into ours: a parse failure carries our error as its cause. */
function normalize(
  code: string | number,
  error: unknown,
  request: Request,
  allowed?: AllowedMethods,
): unknown {
  if (error instanceof MarketError) return error
  if (code === 'PARSE' && error instanceof Error && error.cause instanceof MarketError) return error.cause
  if (code === 'NOT_FOUND') {
    // A preflight (OPTIONS) keeps its 404: CORS grants writes only through corsPreflights, never by an Allow list.
    const allow = request.method === 'OPTIONS' ? [] : (allowed?.(requestPath(request.url)) ?? [])
    return allow.length && !allow.includes(request.method)
      ? new MethodNotAllowedError(allow)
      : routeNotFound()
  }
  if (code === 'PARSE')
    return new MarketError('invalid_json', 400, 'Invalid request', 'The request body is not valid JSON.')
  return error
}

/** The first code (a driver's `code`, else an error's name) along `cause`'s chain: names a fault, quotes nothing. */
function causeCodeOf(cause: unknown): string | null {
  for (let at = cause, depth = 0; at && depth < 8; at = (at as { cause?: unknown }).cause, depth++) {
    const code = (at as { code?: unknown }).code
    if (typeof code === 'string' || typeof code === 'number') return String(code).slice(0, 64)
  }
  return cause instanceof Error ? cause.name.slice(0, 64) : null
}

/**
 * Maps every error (ours, Elysia's, unknown) to an RFC 9457 problem; unexpected ones go to `logger` (else the
 * console) with their request id. Register it before the routes.
 * @example new Elysia().use(problems('http://localhost:3000')).use(routes)
 */
export function problems(typeBase: string, logger?: Logger, allowed?: AllowedMethods) {
  const report = logger
    ? (error: unknown, request: Request) => {
        const fields = { requestId: requestIdOf(request), method: request.method }
        // Our 5xx problems are dependency faults the client was told about (503 with Retry-After, 507): a warning
        // naming the fault and its driver's code, not an error line per refused request.
        if (error instanceof MarketError)
          logger.warn('dependency fault', { ...fields, code: error.code, cause: causeCodeOf(error.cause) })
        else logger.error('unhandled error', fields, error)
      }
    : undefined
  return new Elysia({ name: 'problems' }).onError({ as: 'global' }, ({ code, error, request, set }) => {
    const response = problemResponse(normalize(code, error, request, allowed), request, typeBase, report)
    // Only problems expose their headers to browser scripts: one more header on every answer costs the hot reads
    // about a tenth of their throughput (bench), and Retry-After and RateLimit matter on refusals.
    set.headers['access-control-expose-headers'] = EXPOSED_HEADERS
    return sendAsBuilt(response, set)
  })
}
