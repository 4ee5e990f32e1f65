import {
  bearerKey,
  type RateAllowance,
  type RateClass,
  type RateLimiter,
  rateLimitHeaders,
} from '@agentmarket/core'
import { Elysia } from 'elysia'
import { requestPath } from '../requestPath.ts'

/** How the server limits requests: the limiter, and how many proxies in front of it add to X-Forwarded-For. */
export type RateLimitSettings = { limiter: RateLimiter; trustedProxies: number }

/** The part of Bun's server the limiter asks for the peer's address (absent when a host calls `app.handle`). */
/** What tells the peer's address: Elysia's `server`. */
export type PeerSource = { requestIP(request: Request): { address: string } | null } | null | undefined

const STRICT = new Set<RateClass>(['register', 'pairing', 'payment'])

/**
 * Which bucket a request spends from, by method and path (both API prefixes); null for /mcp, whose handler charges
 * each tool call by what it does.
 */
export function rateClassOf(method: string, url: string): RateClass | null {
  const path = requestPath(url)
  if (path === '/mcp') return null
  if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return 'read'
  const route = path.replace(/^\/api(\/v1)?(?=\/)/, '')
  if (route === '/agents/register') return 'register'
  if (/^\/community\/users\/[^/]+\/pair-agent$/.test(route)) return 'pairing'
  if (/^\/agents\/[^/]+\/tasks(\/[^/]+\/verify-payment)?$/.test(route)) return 'payment'
  return 'write'
}

/**
 * The client's address: the peer, or with `trustedProxies` proxies in front, the address the outermost of them saw
 * (that many entries from the right of X-Forwarded-For). Without trusted proxies the header is ignored: anyone can
 * write it.
 */
export function clientAddress(request: Request, server: PeerSource, trustedProxies: number): string {
  const peer = server?.requestIP(request)?.address ?? 'unknown'
  if (trustedProxies === 0) return peer
  const forwarded = (request.headers.get('x-forwarded-for') ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
  if (forwarded.length === 0) return peer
  return forwarded[Math.max(0, forwarded.length - trustedProxies)] ?? peer
}

/** The kinds of request an MCP body makes: one per JSON-RPC message, tool calls by what the tool does. */
export function mcpRateClasses(body: unknown): RateClass[] {
  const messages = Array.isArray(body) ? body : [body]
  return messages.map((message) => {
    const { method, params } = (message ?? {}) as { method?: unknown; params?: { name?: unknown } }
    if (method !== 'tools/call') return 'read'
    if (params?.name === 'register_agent') return 'register'
    if (params?.name === 'create_task' || params?.name === 'verify_payment') return 'payment'
    return 'write'
  })
}

/** Adds the RateLimit headers of the strict kinds (register, pairing, payment) to an allowed answer. */
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
): void | Promise<void> {
  const address = clientAddress(request, server, settings.trustedProxies)
  // Reads are limited by address only: reading the Authorization header of every read costs throughput.
  const apiKey = rateClass === 'read' ? undefined : bearerKey(request)
  const allowed = settings.limiter.check(rateClass, { address, apiKey })
  if (allowed instanceof Promise) return allowed.then((result) => showAllowance(rateClass, result, headers))
  showAllowance(rateClass, allowed, headers)
}

/** Rate limits on every route registered after it (SECURITY.md gives the limits). */
export function rateLimits(settings: RateLimitSettings) {
  return new Elysia({ name: 'rate-limits' }).onRequest(({ request, server, set }) => {
    const rateClass = rateClassOf(request.method, request.url)
    if (rateClass !== null) return chargeRequest(settings, rateClass, request, server, set.headers)
  })
}
