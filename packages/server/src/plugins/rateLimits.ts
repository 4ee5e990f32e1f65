import {
  bearerKey,
  type RateAllowance,
  type RateClass,
  type RateLimiter,
  rateClassOf,
  rateLimitHeaders,
} from '@agentmarket/core/routes'
import { Elysia } from 'elysia'
import { A2A_METHODS, a2aJsonRpcMethod, a2aRestMethod } from '../a2a/methods.ts'
import { TOOL_RATE_CLASSES } from '../mcp/tools.ts'
import { RATE_EXTENSION } from '../openapi/operation.ts'

/** How the server limits requests: the limiter, and how many proxies in front of it add to X-Forwarded-For. */
export type RateLimitSettings = { limiter: RateLimiter; trustedProxies: number }

/** The part of Bun's server the limiter asks for the peer's address (absent when a host calls `app.handle`). */
/** What tells the peer's address: Elysia's `server`. */
export type PeerSource = { requestIP(request: Request): { address: string } | null } | null | undefined

const STRICT = new Set<RateClass>(['register', 'register_attempt', 'pairing', 'keys', 'payment'])

/** A route as Elysia lists it: its method, path template and documentation. */
export type RouteEntry = { method: string; path: string; hooks?: { detail?: unknown } }

/** Which bucket a request to a matched route spends: null when its handler charges itself (MCP). */
export type RouteRateClass = (method: string, route: string) => RateClass | null

/**
 * The rate class of every route, read from its own facts (`x-rate-limit` in its operation, see `operation`), keyed by
 * method and path template: the matched route decides, so every alias the router accepts (a trailing slash, /api or
 * /api/v1, dot segments) spends the same bucket. Routes without the fact spend `read` for GET and HEAD, else `write`.
 */
export function routeRateClasses(routes: readonly RouteEntry[]): RouteRateClass {
  const table = new Map<string, RateClass | 'none'>()
  for (const route of routes) {
    const declared = (route.hooks?.detail as Record<string, unknown> | undefined)?.[RATE_EXTENSION]
    if (typeof declared === 'string')
      table.set(`${route.method} ${route.path}`, declared as RateClass | 'none')
  }
  // Each route's class is worked out on its first request and kept by path, then method: a request makes no key.
  const known = new Map<string, Map<string, RateClass | null>>()
  return (method, route) => {
    let methods = known.get(route)
    if (methods === undefined) {
      methods = new Map()
      known.set(route, methods)
    }
    let rateClass = methods.get(method)
    if (rateClass === undefined) {
      rateClass = rateClassOf({ method, rate: table.get(`${method} ${route}`) })
      methods.set(method, rateClass)
    }
    return rateClass
  }
}

// Each request's peer address once asked. Bun asks the socket again on every `requestIP` (a system call, about as
// much as the rest of a cached read): an order's limiter and its row, or a registration's two buckets, share one.
const peers = new WeakMap<Request, string>()

/** The address `server` gives the peer of `request`, asked of it once per request. */
function peerOf(request: Request, server: PeerSource): string {
  let peer = peers.get(request)
  if (peer === undefined) {
    peer = server?.requestIP(request)?.address ?? 'unknown'
    peers.set(request, peer)
  }
  return peer
}

/**
 * The client's address: the peer, or with `trustedProxies` proxies in front, the address the outermost of them saw
 * (that many entries from the right of X-Forwarded-For). Without trusted proxies the header is ignored: anyone can
 * write it.
 */
export function clientAddress(request: Request, server: PeerSource, trustedProxies: number): string {
  if (trustedProxies === 0) return peerOf(request, server)
  const forwarded = (request.headers.get('x-forwarded-for') ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
  // The peer (a proxy) is asked of the server only when the header names no one.
  return forwarded[Math.max(0, forwarded.length - trustedProxies)] ?? peerOf(request, server)
}

/** The kinds of request an MCP body makes: one per JSON-RPC message, tool calls by what the tool does. */
export function mcpRateClasses(body: unknown): RateClass[] {
  const messages = Array.isArray(body) ? body : [body]
  return messages.map((message) => {
    const { method, params } = (message ?? {}) as { method?: unknown; params?: { name?: unknown } }
    if (method !== 'tools/call') return 'read'
    return (typeof params?.name === 'string' && TOOL_RATE_CLASSES.get(params.name)) || 'write'
  })
}

/**
 * The rate class of one A2A request, as the A2A table gives its operation (`A2A_METHODS`: an order spends an
 * order's, `payment`, as POST …/tasks does; the rest a read's), whatever binding carries it: the JSON-RPC method
 * of `body`, or with `restPath` (the path after an interface's `…/rest`) the HTTP+JSON route. A request naming no
 * operation is refused unread, as a read.
 */
export function a2aRateClass(httpMethod: string, body: unknown, restPath: string | null): RateClass {
  const method = restPath === null ? a2aJsonRpcMethod(body) : a2aRestMethod(httpMethod, restPath)
  return method === null ? 'read' : A2A_METHODS[method].rate
}

/**
 * How many tokens of its rate class one A2A request spends: its operation's `tokens` (A2A_METHODS) of its params (the
 * JSON-RPC `params`, or with `restPath` the HTTP+JSON query of `url`), else one.
 */
export function a2aTokens(httpMethod: string, body: unknown, restPath: string | null, url: string): number {
  const method = restPath === null ? a2aJsonRpcMethod(body) : a2aRestMethod(httpMethod, restPath)
  const tokens = method === null ? undefined : A2A_METHODS[method].tokens
  if (!tokens) return 1
  const params =
    restPath === null
      ? ((body as { params?: unknown }).params ?? {})
      : Object.fromEntries(new URL(url).searchParams)
  return tokens(typeof params === 'object' && params !== null ? (params as Record<string, unknown>) : {})
}

/** Adds the RateLimit headers of the strict kinds (register, pairing, keys, payment) to an allowed answer. */
function showAllowance(
  rateClass: RateClass,
  { policy, decision }: RateAllowance,
  headers: Record<string, unknown>,
) {
  if (STRICT.has(rateClass)) Object.assign(headers, rateLimitHeaders(policy, decision))
}

/**
 * Charges one request of `rateClass` to the client's address, and for writes to its API key; throws RateLimitedError
 * (a 429 problem) when a bucket is empty. Synchronous when the tokens are held in memory (most requests).
 */
export function chargeRequest(
  settings: RateLimitSettings,
  rateClass: RateClass,
  request: Request,
  server: PeerSource,
  headers: Record<string, unknown>,
  tokens = 1,
): void | Promise<void> {
  const address = clientAddress(request, server, settings.trustedProxies)
  // Reads are limited by address only: reading the Authorization header of every read costs throughput.
  const apiKey = rateClass === 'read' ? undefined : bearerKey(request)
  const allowed = settings.limiter.check(rateClass, { address, apiKey }, tokens)
  if (allowed instanceof Promise) return allowed.then((result) => showAllowance(rateClass, result, headers))
  showAllowance(rateClass, allowed, headers)
}

/**
 * Rate limits on every route registered after it (SECURITY.md gives the limits), charged once the router has matched
 * the route, by the class `classOf` gives that route. A path no route matches (404) touches nothing and is not charged.
 * The peer's address comes from `server` (the listening server), not from the hook's context: Elysia defines `server`
 * on each request's context when a hook names it.
 */
export function rateLimits(settings: RateLimitSettings, classOf: RouteRateClass, server: () => PeerSource) {
  return new Elysia({ name: 'rate-limits' }).onBeforeHandle({ as: 'global' }, ({ request, route, set }) => {
    const rateClass = classOf(request.method, route)
    if (rateClass !== null) return chargeRequest(settings, rateClass, request, server(), set.headers)
  })
}
