import { MethodNotAllowedError } from '../errors.ts'
import { bearerKey, jsonObjectOf, jsonOfBytes, problemResponse, readLimited, routeNotFound } from '../http.ts'
import type { MarketplaceActions } from '../Marketplace.ts'
import type { RateClass, RateLimiter } from '../RateLimit.ts'
import { etagOf, matchesETag } from './etag.ts'
import { MARKET_ROUTES } from './marketRoutes.ts'
import { compileAllowedMethods, compileRoutes } from './match.ts'
import { problemTypeAnswer } from './problemTypes.ts'
import { type RouteReply, type RouteRow, rateClassOf } from './RouteRow.ts'
import { DEFAULT_STREAM_LIMITS, type StreamLimits, streamSlots } from './streamSlots.ts'

/** What a host may add to the fetch handler. */
export type FetchHandlerOptions = {
  /** The operations served (default: every marketplace operation). */
  routes?: readonly RouteRow[]
  /** Rate limits per operation (its row's class), charged to the client's address and API key. */
  limiter?: RateLimiter
  /** The client's address (default: unknown, so every client shares the address buckets). */
  clientOf?: (request: Request) => string | null
  /** Reports unexpected errors (default: console.error). */
  report?: (error: unknown, request: Request) => void
  /**
   * Live feed streams open at once (default DEFAULT_STREAM_LIMITS): in all, and per client address when `clientOf`
   * names clients (without it every client is one address, so only the total applies).
   */
  streams?: StreamLimits
}

/** A JSON reply as a web Response, with a content ETag (and 304) when the row asks for one. */
async function responseOf(row: RouteRow, reply: RouteReply, request: Request): Promise<Response> {
  if (reply instanceof Response) return reply
  const status = reply.status ?? row.ok.status
  const headers = new Headers(reply.headers)
  const body = JSON.stringify(reply.body)
  if (row.etag) {
    const etag = await etagOf(body)
    headers.set('etag', etag)
    headers.set('cache-control', row.etag)
    if (matchesETag(request.headers.get('if-none-match'), etag))
      return new Response(null, { status: 304, headers })
  }
  // A row may answer another JSON media type (an A2A card asked for as application/a2a+json).
  if (!headers.has('content-type')) headers.set('content-type', 'application/json')
  return new Response(body, { status, headers })
}

/**
 * The marketplace as a web-standard fetch handler, for hosts that speak `Request` and `Response` (Workers, Deno, Bun,
 * Node through an adapter, Hono): every operation of the route table under `/api` and `/api/v1`, with the 64 KiB JSON
 * body limit, content ETags, capped feed streams and RFC 9457 problems; rate limits when given a limiter. The Elysia server is the production host; this is its embeddable
 * twin over the same rows.
 * @example export default createFetchHandler(Marketplace.create({ store: memoryStore(), config }))
 */
export function createFetchHandler(market: MarketplaceActions, options: FetchHandlerOptions = {}) {
  const match = compileRoutes(options.routes ?? MARKET_ROUTES)
  const allowed = compileAllowedMethods(options.routes ?? MARKET_ROUTES)
  const clientOf = options.clientOf ?? (() => null)
  const limiter = options.limiter
  const limits = options.streams ?? DEFAULT_STREAM_LIMITS
  const streams = streamSlots(options.clientOf ? limits : { ...limits, perClient: limits.total })
  return {
    /** Answers one request. */
    async fetch(request: Request): Promise<Response> {
      try {
        const url = new URL(request.url)
        const { row, params } = match(request.method, url.pathname) ?? {}
        if (!row || !params) {
          const docs = problemTypeAnswer(request.method, url.pathname)
          if (docs) return docs
          // A preflight (OPTIONS) stays a 404: no route grants it, so browsers keep cross-origin writes closed.
          const allow = request.method === 'OPTIONS' ? [] : allowed(url.pathname)
          throw allow.length ? new MethodNotAllowedError(allow) : routeNotFound()
        }
        const apiKey = bearerKey(request)
        const rateClass = rateClassOf(row)
        if (limiter && rateClass)
          await limiter.check(rateClass, {
            address: clientOf(request) ?? 'unknown',
            apiKey: rateClass === 'read' ? undefined : apiKey,
          })
        const rawBody = request.method === 'GET' ? undefined : await readLimited(request)
        const body = rawBody ? jsonObjectOf(jsonOfBytes(rawBody, request)) : undefined
        const reply = await row.call(market, {
          params,
          query: Object.fromEntries(url.searchParams),
          body,
          headers: request.headers,
          apiKey,
          request,
          rawBody,
          client: () => clientOf(request),
          admitStream: () => streams.open(clientOf(request) ?? 'unknown'),
          ...(limiter && {
            charge: async (extra: RateClass) => {
              await limiter.check(extra, { address: clientOf(request) ?? 'unknown', apiKey })
            },
          }),
        })
        return await responseOf(row, reply, request)
      } catch (error) {
        return problemResponse(error, request, market.config.baseUrl, options.report)
      } finally {
        // A body nobody read (a 404, a 429, an operation without one) is dropped, not held for the whole request.
        if (request.body && !request.bodyUsed) request.body.cancel().catch(() => {})
      }
    },
  }
}
