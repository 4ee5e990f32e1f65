import { routeNotFound } from '@agentmarket/core/routes'
import { Elysia } from 'elysia'

/** The request headers a browser client of the API may send. */
const ALLOWED_HEADERS = [
  'authorization',
  'content-type',
  'idempotency-key',
  'x-request-id',
  'x-wallet-address',
  'x-wallet-signature',
  'x-wallet-timestamp',
].join(', ')

/** The headers of a problem a browser script may read besides the basic ones (CORS hides the rest). */
export const EXPOSED_HEADERS = [
  'etag',
  'retry-after',
  'ratelimit',
  'ratelimit-policy',
  'x-request-id',
  'idempotent-replayed',
  'www-authenticate',
  'payment-receipt',
].join(', ')

/**
 * Browser preflights: granted only to the configured origins (CORS_ORIGINS), so pages of those sites may write with a
 * key; any other origin, or none configured, gets the 404 it always got and its browser refuses to send the write.
 * Reads need no preflight: every answer allows any origin.
 */
export function corsPreflights(origins: readonly string[]) {
  const allowed = new Set(origins)
  return new Elysia({ name: 'cors-preflights' }).options(
    '/*',
    ({ request, set }) => {
      const origin = request.headers.get('origin')
      if (origin === null || !allowed.has(origin)) throw routeNotFound()
      set.status = 204
      Object.assign(set.headers, {
        'access-control-allow-origin': origin,
        'access-control-allow-methods': 'GET, POST, PUT, DELETE',
        'access-control-allow-headers': ALLOWED_HEADERS,
        'access-control-max-age': '600',
        vary: 'Origin',
      })
      return ''
    },
    { detail: { hide: true } },
  )
}
