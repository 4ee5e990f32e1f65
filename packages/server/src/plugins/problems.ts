import { MarketError, problemResponse, routeNotFound } from '@agentmarket/core'
import { Elysia } from 'elysia'
import type { Logger } from '../log.ts'
import { EXPOSED_HEADERS } from './cors.ts'
import { requestIdOf } from './requestLog.ts'

/** Unwraps Elysia's own errors into ours: a parse failure carries our error as its cause. */
function normalize(code: string | number, error: unknown): unknown {
  if (error instanceof MarketError) return error
  if (code === 'PARSE' && error instanceof Error && error.cause instanceof MarketError) return error.cause
  if (code === 'NOT_FOUND') return routeNotFound()
  if (code === 'PARSE')
    return new MarketError('invalid_json', 400, 'Invalid request', 'The request body is not valid JSON.')
  return error
}

/**
 * Maps every error (ours, Elysia's, unknown) to an RFC 9457 problem; unexpected ones go to `logger` (else the
 * console) with their request id. Register it before the routes.
 * @example new Elysia().use(problems('http://localhost:3000')).use(routes)
 */
export function problems(typeBase: string, logger?: Logger) {
  const report = logger
    ? (error: unknown, request: Request) =>
        logger.error('unhandled error', { requestId: requestIdOf(request), method: request.method }, error)
    : undefined
  return new Elysia({ name: 'problems' }).onError({ as: 'global' }, ({ code, error, request, set }) => {
    const response = problemResponse(normalize(code, error), request, typeBase, report)
    // The request log reads the status from here.
    set.status = response.status
    // Only problems expose their headers to browser scripts: one more header on every answer costs the hot reads
    // about a tenth of their throughput (bench), and Retry-After and RateLimit matter on refusals.
    set.headers['access-control-expose-headers'] = EXPOSED_HEADERS
    return response
  })
}
