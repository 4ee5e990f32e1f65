import {
  answerResponse,
  bearerKey,
  defaultConfig,
  Marketplace,
  type MarketplaceActions,
  memoryStore,
  problemResponse,
  readJsonObject,
  routeNotFound,
} from '@agentmarket/core'

type Call = {
  market: MarketplaceActions
  request: Request
  url: URL
  params: string[]
  body: Record<string, unknown> | undefined
}
type Route = { method: string; path: RegExp; handle: (call: Call) => Promise<Response> }

const queryOf = (url: URL) => Object.fromEntries(url.searchParams)

/** The card with a content ETag; 304 when the client already has it. */
async function withETag(value: unknown, request: Request): Promise<Response> {
  const body = JSON.stringify(value)
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(body)))
  const hash = btoa(String.fromCharCode(...digest))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
  const headers = { etag: `W/"${hash.slice(0, 27)}"`, 'cache-control': 'public, max-age=60' }
  const known = (request.headers.get('if-none-match') ?? '').split(',').map((tag) => tag.trim())
  if (known.includes('*') || known.some((tag) => tag.replace(/^W\//, '') === headers.etag.slice(2)))
    return new Response(null, { status: 304, headers })
  return new Response(body, { headers: { ...headers, 'content-type': 'application/json' } })
}

const ok = async (value: Promise<unknown>) => Response.json(await value)

// Paths are matched after the `/api` or `/api/v1` prefix; each group is one path segment.
const routes: Route[] = [
  { method: 'POST', path: /^\/agents\/register$/, handle: (c) => ok(c.market.registerAgent(c.body ?? {})) },
  {
    method: 'POST',
    path: /^\/agents\/([^/]+)\/heartbeat$/,
    handle: (c) => ok(c.market.heartbeat(c.params[0] ?? '', bearerKey(c.request))),
  },
  { method: 'GET', path: /^\/community\/agents$/, handle: (c) => ok(c.market.listAgents(queryOf(c.url))) },
  {
    method: 'GET',
    path: /^\/community\/agents\/([^/]+)$/,
    handle: (c) => ok(c.market.getAgent(c.params[0] ?? '')),
  },
  {
    method: 'GET',
    path: /^\/agents\/([^/]+)\/agent-card\.json$/,
    handle: async (c) => withETag(await c.market.agentCard(c.params[0] ?? ''), c.request),
  },
  {
    method: 'POST',
    path: /^\/agents\/([^/]+)\/tasks$/,
    handle: async (c) =>
      answerResponse(
        await c.market.createTask(c.params[0] ?? '', c.body ?? {}, {
          idempotencyKey: c.request.headers.get('idempotency-key'),
        }),
      ),
  },
  {
    method: 'GET',
    path: /^\/agents\/([^/]+)\/tasks$/,
    handle: (c) => ok(c.market.listTasks(c.params[0] ?? '', bearerKey(c.request), queryOf(c.url))),
  },
  {
    method: 'POST',
    path: /^\/agents\/([^/]+)\/tasks\/([^/]+)\/complete$/,
    handle: (c) =>
      ok(c.market.completeTask(c.params[0] ?? '', c.params[1] ?? '', bearerKey(c.request), c.body ?? {})),
  },
  {
    method: 'GET',
    path: /^\/agents\/([^/]+)\/tasks\/([^/]+)$/,
    handle: (c) => ok(c.market.getTask(c.params[0] ?? '', c.params[1] ?? '')),
  },
  { method: 'GET', path: /^\/feed\/live$/, handle: (c) => ok(c.market.liveFeed(queryOf(c.url))) },
]

/** The route and its decoded path segments, or a 404. */
function match(method: string, pathname: string): { route: Route; params: string[] } {
  const rest = /^\/api(?:\/v1)?(\/.*)$/.exec(pathname)?.[1] ?? ''
  for (const route of routes) {
    const found = route.method === method ? route.path.exec(rest) : null
    if (!found) continue
    try {
      return { route, params: found.slice(1).map(decodeURIComponent) }
    } catch {
      throw routeNotFound()
    }
  }
  throw routeNotFound()
}

/** A fetch handler over `market`. */
export function createFetchHandler(market: MarketplaceActions) {
  return {
    async fetch(request: Request): Promise<Response> {
      const url = new URL(request.url)
      try {
        const { route, params } = match(request.method, url.pathname)
        const body = request.method === 'POST' ? await readJsonObject(request) : undefined
        return await route.handle({ market, request, url, params, body })
      } catch (error) {
        return problemResponse(error, request, market.config.baseUrl)
      }
    },
  }
}

let handler: ReturnType<typeof createFetchHandler> | undefined

/** The marketplace on an in-memory store, as a `{ fetch }` module for Workers, Deno Deploy and Bun.serve. */
export default {
  fetch(request: Request): Promise<Response> {
    // Workers hand no configuration to module scope, and the memory store lives only as long as this isolate, so
    // the origin it is first reached at is taken as its public address.
    if (!handler) {
      const baseUrl = new URL(request.url).origin
      handler = createFetchHandler(
        Marketplace.create({ store: memoryStore(), config: defaultConfig(baseUrl) }),
      )
    }
    return handler.fetch(request)
  },
}
