import { MarketError, problemResponse, routeNotFound } from '@agentmarket/core'
import { Elysia } from 'elysia'

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
 * Maps every error (ours, Elysia's, unknown) to an RFC 9457 problem. Register it before the routes.
 * @example new Elysia().use(problems('http://localhost:3000')).use(routes)
 */
export function problems(typeBase: string) {
  return new Elysia({ name: 'problems' }).onError({ as: 'global' }, ({ code, error, request }) =>
    problemResponse(normalize(code, error), request, typeBase),
  )
}
