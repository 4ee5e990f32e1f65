import {
  ChainUnavailableError,
  MarketError,
  NotFoundError,
  toProblem,
  UnauthorizedError,
} from '@agentmarket/core'
import { Elysia } from 'elysia'

/** The media type of every error body. */
export const PROBLEM_MEDIA_TYPE = 'application/problem+json'

/** Builds the problem+json response for any thrown value. */
export function problemResponse(error: unknown, request: Request, typeBase: string): Response {
  const problem = toProblem(error, new URL(request.url).pathname, typeBase)
  const headers = new Headers({ 'content-type': PROBLEM_MEDIA_TYPE })
  if (problem.status === 401) {
    headers.set(
      'www-authenticate',
      error instanceof UnauthorizedError ? error.challenge : 'Bearer realm="agentmarket"',
    )
  }
  if (error instanceof ChainUnavailableError) headers.set('retry-after', String(error.retryAfterSeconds))
  if (problem.status >= 500 && !(error instanceof MarketError))
    console.error('unhandled error', request.method, new URL(request.url).pathname, error)
  return new Response(JSON.stringify(problem), { status: problem.status, headers })
}

/** Unwraps Elysia's own errors into ours: a parse failure carries our error as its cause. */
function normalize(code: string | number, error: unknown): unknown {
  if (error instanceof MarketError) return error
  if (code === 'PARSE' && error instanceof Error && error.cause instanceof MarketError) return error.cause
  if (code === 'NOT_FOUND') return new NotFoundError('not_found', 'No such resource or method.')
  if (code === 'PARSE')
    return new MarketError('invalid_json', 400, 'Invalid request', 'The request body is not valid JSON.')
  return error
}

/**
 * Maps every error (ours, Elysia's, unknown) to an RFC 9457 problem. Register it before the routes.
 * @example new Elysia().use(problems('http://localhost:3000')).use(routes)
 */
export function problems(typeBase: string) {
  return new Elysia({ name: 'problems' }).onError({ as: 'global' }, ({ code, error, request }) =>
    problemResponse(normalize(code, error), request, typeBase),
  )
}
