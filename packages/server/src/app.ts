import { type MarketplaceActions, type PaidOfferPage, useNativeHashes } from '@agentmarket/core'
import { type StreamLimits, streamSlots } from '@agentmarket/core/routes'
import { Elysia } from 'elysia'
import { a2aRoutes } from './a2a/routes.ts'
import { bunHashes } from './bunHashes.ts'
import type { Logger } from './log.ts'
import { lazyMcpHandler, mcpMethodNotAllowed } from './mcp/http.ts'
import { docsUi } from './openapi/docsUi.ts'
import {
  asDiscoveryDocument,
  type OpenApiDocument,
  openapiDocument,
  withPaidOperations,
} from './openapi/document.ts'
import { RATE_EXTENSION } from './openapi/operation.ts'
import { absoluteUrls } from './plugins/absoluteUrls.ts'
import { corsPreflights } from './plugins/cors.ts'
import { parseJsonBody } from './plugins/jsonBody.ts'
import { allowedMethods, problems } from './plugins/problems.ts'
import {
  chargeRequest,
  clientAddress,
  mcpRateClasses,
  type RateLimitSettings,
  type RouteRateClass,
  rateLimits,
  routeRateClasses,
} from './plugins/rateLimits.ts'
import { requestLog } from './plugins/requestLog.ts'
import { catalogRoutes } from './routes/catalog.ts'
import type { RouteDeps } from './routes/deps.ts'
import { type HealthProbes, serverRoutes } from './routes/discovery.ts'
import { APP_HEADERS, jsonWithETag, type Reply } from './routes/etag.ts'
import { llmsGuide, llmsRoutes } from './routes/llms.ts'
import { tableRoutes } from './routes/table.ts'
import { VERSION } from './version.ts'
import { API_VERSIONS, type ApiVersion, deprecationHeaders, versionOfPath } from './versions.ts'
import { problemTypeRoutes } from './web/problemPage.ts'
import { webRoutes } from './web/routes.ts'

/** What the server needs: the marketplace actions and where it is published. */
export type AppDeps = {
  market: MarketplaceActions
  baseUrl: string
  startedAt?: Date
  /** The API versions and their deprecations; default: v1, current. */
  versions?: ApiVersion[]
  /** The order mailbox when orders by e-mail are taken (the SMTP listener is on); absent: they are not. */
  orderMailbox?: string | null
  /** The JSON-lines logger: a line per request and X-Request-Id on every answer; absent: neither. */
  logger?: Logger | null
  /** Browser origins whose pages may write (their preflights are granted); absent or empty: none. */
  corsOrigins?: readonly string[]
  /** Rate limits; absent or null: none (trusted test set-ups, hosts that limit in front). */
  rateLimits?: RateLimitSettings | null
  /** Proxies in front whose X-Forwarded-For names the client; default: the rate limits' setting, else 0. */
  trustedProxies?: number
  /** Live feed streams open at once, per client address and in all (default DEFAULT_STREAM_LIMITS). */
  streamLimits?: StreamLimits
  /** How health and readiness probe the database and chain (default: the database within 1 s, no chain). */
  healthProbes?: HealthProbes
}

/** Every API route group, mounted under one prefix. */
function api(prefix: string, deps: RouteDeps) {
  return new Elysia({ prefix, seed: prefix }).use(tableRoutes(serverRoutes(deps), deps))
}

/**
 * The Elysia app (not listening): every route under /api and /api/v1, errors as problem+json.
 * @example const app = createApp({ market, baseUrl: 'http://localhost:3000' }); app.listen(3000)
 */
export function createApp(deps: AppDeps) {
  // Keys are hashed on every authenticated request, pairing codes keyed by an HMAC on every registration, and every
  // 402 challenge carries an HMAC id: Bun's native hashes do it, not JavaScript's or Web Crypto's (bench/CHANGES.md).
  useNativeHashes(bunHashes)
  const versions = deps.versions ?? API_VERSIONS
  const routeDeps: RouteDeps = {
    market: deps.market,
    baseUrl: deps.baseUrl,
    version: VERSION,
    startedAt: deps.startedAt ?? new Date(),
    orderMailbox: deps.orderMailbox ?? null,
    versions,
    server: () => app.server,
    clientOf: (request, server) =>
      clientAddress(request, server, deps.trustedProxies ?? deps.rateLimits?.trustedProxies ?? 0),
    streams: streamSlots(deps.streamLimits),
    healthProbes: deps.healthProbes,
    charge: deps.rateLimits
      ? (rateClass, request, server, headers, tokens) =>
          chargeRequest(deps.rateLimits as RateLimitSettings, rateClass, request, server, headers, tokens)
      : undefined,
  }

  // Set once when handlers are compiled, not by a hook on every request. The read API is open to every origin;
  // writes from browsers stay closed unless corsOrigins names the site: only then is a preflight (OPTIONS) granted.
  const base = new Elysia().headers({ ...APP_HEADERS })
  // Only when some version is deprecated: a global request hook costs every request (bench: the HTTP section).
  const withDeprecations = versions.some((version) => version.deprecation)
    ? base.onRequest(({ request, set }) => {
        const version = versionOfPath(new URL(request.url).pathname, versions)
        if (version?.deprecation) Object.assign(set.headers, deprecationHeaders(version, deps.baseUrl))
      })
    : base
  const limits = deps.rateLimits ?? null
  const logger = deps.logger ?? null
  const guide = llmsGuide(deps.baseUrl, deps.orderMailbox ?? null, deps.market.config.chain.chainId)
  const mcp = lazyMcpHandler(deps.market, guide, logger ?? undefined)
  // First, so every answer (a 429 included) carries its request id and is logged.
  const logged =
    logger && logger.level !== 'off' ? withDeprecations.use(requestLog(logger)) : withDeprecations
  // Wrappers nest in the order they are added, the last outermost: the log sees the request the routes see.
  const absolute = logged.use(absoluteUrls(deps.baseUrl))
  const withProblems = absolute.use(
    problems(
      deps.baseUrl,
      logger ?? undefined,
      allowedMethods((): readonly { method: string; path: string }[] => app.routes),
    ),
  )
  // Only when limits are on: the hook costs every request (bench: the HTTP section).
  // The routes' classes are read once, on first request, when every route is registered.
  let classes: RouteRateClass | undefined
  const classOf: RouteRateClass = (method, route) => {
    classes ??= routeRateClasses(app.routes)
    return classes(method, route)
  }
  const limited = limits ? withProblems.use(rateLimits(limits, classOf, routeDeps.server)) : withProblems
  const withCors = deps.corsOrigins?.length ? limited.use(corsPreflights(deps.corsOrigins)) : limited
  const app = withCors
    .use(llmsRoutes(routeDeps))
    .use(webRoutes(routeDeps))
    .use(problemTypeRoutes())
    .use(a2aRoutes(routeDeps))
    .use(catalogRoutes(routeDeps))
    .use(api('/api', routeDeps))
    .use(api('/api/v1', routeDeps))
    .use(docsUi('/api'))
    .use(docsUi('/api/v1'))
    .post(
      '/mcp',
      async ({ request, body, server, set }) => {
        if (limits)
          for (const rateClass of mcpRateClasses(body))
            await chargeRequest(limits, rateClass, request, server, set.headers)
        const charge = routeDeps.charge
        return mcp(
          request,
          body,
          routeDeps.clientOf(request, server),
          charge && ((rateClass) => charge(rateClass, request, server, set.headers)),
        )
      },
      // Each JSON-RPC message is charged above by what its tool does.
      { detail: { hide: true, [RATE_EXTENSION]: 'none' } as never, parse: parseJsonBody },
    )
    .get('/mcp', mcpMethodNotAllowed, { detail: { hide: true } })
    .delete('/mcp', mcpMethodNotAllowed, { detail: { hide: true } })
  // The routes' part is built once, on first request, when every route is registered; the paid operations (the
  // first page of offers, a bounded read) come from the database on each request, so the ETag follows prices.
  let document: ReturnType<typeof openapiDocument> | undefined
  // The core hands out the same page while its offers are unchanged (its read cache): the document made from it is
  // then the same object, whose JSON and ETag (about 190 KiB) are made once.
  let last: { page: PaidOfferPage; complete: OpenApiDocument; discovery: OpenApiDocument } | undefined
  const currentDocuments = async () => {
    document ??= openapiDocument(app, { baseUrl: deps.baseUrl })
    const page = await deps.market.paidOffers({ limit: DOCUMENT_OFFERS })
    if (last?.page !== page) {
      const complete = withPaidOperations(document, page)
      last = { page, complete, discovery: asDiscoveryDocument(complete) }
    }
    return last
  }
  const serveDocument = async ({ request, set }: { request: Request; set: Reply }) =>
    jsonWithETag((await currentDocuments()).complete, request, set, 'no-cache')
  // MPP's payment discovery reads /openapi.json at the origin: cached 5 minutes, readable from any origin.
  const serveDiscovery = async ({ request, set }: { request: Request; set: Reply }) => {
    set.headers['access-control-allow-origin'] = '*'
    return jsonWithETag((await currentDocuments()).discovery, request, set, 'public, max-age=300')
  }
  return app
    .get('/openapi.json', serveDiscovery, { detail: { hide: true } })
    .get('/api/openapi.json', serveDocument, { detail: { hide: true } })
    .get('/api/v1/openapi.json', serveDocument, {
      detail: { hide: true },
    })
}

/** How many paid operations the OpenAPI document itself holds; GET /api/paid-offers pages through all of them. */
const DOCUMENT_OFFERS = 100

/** The app's type, for hosts and tests. */
export type App = ReturnType<typeof createApp>
