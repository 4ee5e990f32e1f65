import { MARKET_ROUTES } from '@agentmarket/core'
import { apiPathOf, type RouteAuth, type RouteRow } from '@agentmarket/core/routes'
import { VERSIONING_POLICY } from '../versions.ts'
import type { RouteDeps } from './deps.ts'

/** How an endpoint is authenticated, as the index tells clients. */
export type EndpointAuth =
  | 'none'
  | 'bearer'
  | 'wallet-signature'
  | 'wallet-address-signature'
  | 'bearer-or-wallet-signature'
  | 'mpp'
  | 'webhook-secret'

const INDEX_AUTH: Record<RouteAuth, EndpointAuth> = {
  none: 'none',
  bearer: 'bearer',
  walletSignature: 'wallet-signature',
  walletAddressSignature: 'wallet-address-signature',
  bearerOrWalletSignature: 'bearer-or-wallet-signature',
  mpp: 'mpp',
  webhookSecret: 'webhook-secret',
}

/** The server's own operations, besides the marketplace's: the index and health (their calls need the host). */
export const HOST_FACTS: Record<'apiIndex' | 'health' | 'live' | 'ready', Omit<RouteRow, 'call'>> = {
  apiIndex: {
    id: 'apiIndex',
    method: 'GET',
    path: '',
    summary: 'The API index: endpoints, entry points, versioning policy',
    tag: 'Discovery',
    description:
      'Public. Every endpoint with its method and authentication, the entry points (OpenAPI, docs, MCP, llms.txt) and the versioning policy.',
    auth: 'none',
    ok: { status: 200, response: 'Index', description: 'The index' },
    problems: [],
  },
  health: {
    id: 'health',
    method: 'GET',
    path: '/community/health',
    summary: 'Service and database health (503 when the database cannot be read)',
    tag: 'Discovery',
    description: 'Public. Whether the service and its database answer; 503 when the database cannot be read.',
    auth: 'none',
    ok: { status: 200, response: 'Health', description: 'Healthy' },
    problems: [],
  },
  live: {
    id: 'live',
    method: 'GET',
    path: '/health/live',
    summary: 'Liveness: the process answers (for a balancer or orchestrator)',
    tag: 'Discovery',
    description:
      'Public, never rate-limited. 200 while the process can answer at all; it reads no dependency, so a database or chain outage never restarts a node.',
    auth: 'none',
    rate: 'none',
    ok: { status: 200, response: 'Liveness', description: 'The process is alive' },
    problems: [],
  },
  ready: {
    id: 'ready',
    method: 'GET',
    path: '/health/ready',
    summary: 'Readiness: whether this node can serve (503 while its database does not answer)',
    tag: 'Discovery',
    description:
      'Public, never rate-limited. 200 when the database answers within HEALTH_PROBE_TIMEOUT_MS, else 503 with the same body. A chain that does not answer shows as `chain: degraded` with 200: it would take every node out at once, and only payment checks need it.',
    auth: 'none',
    rate: 'none',
    ok: { status: 200, response: 'Readiness', description: 'Ready to serve' },
    problems: [],
  },
}

/** The documents served beside the operations. */
const DOCUMENTS = [
  { method: 'GET', path: '/api/openapi.json', auth: 'none' },
  { method: 'GET', path: '/api/docs', auth: 'none' },
] as const

/** Every public endpoint, unversioned, from the route table; each is also served under /api/v1. */
export const ENDPOINTS: ReadonlyArray<{ method: string; path: string; auth: EndpointAuth }> = [
  ...[HOST_FACTS.apiIndex, ...MARKET_ROUTES, HOST_FACTS.health, HOST_FACTS.live, HOST_FACTS.ready].map(
    (row) => ({
      method: row.method,
      path: apiPathOf(row),
      auth: INDEX_AUTH[row.auth],
    }),
  ),
  ...DOCUMENTS,
]

/** The index, SPEC row 1: the endpoints, entry points and the versioning policy. */
function apiIndex({ baseUrl, version, versions, orderMailbox }: RouteDeps) {
  return {
    name: 'agentmarket',
    version,
    apiVersion: '1',
    endpoints: ENDPOINTS,
    openapi: `${baseUrl}/api/openapi.json`,
    llms: `${baseUrl}/llms.txt`,
    mcp: `${baseUrl}/mcp`,
    email: orderMailbox
      ? {
          mailbox: orderMailbox,
          subject: 'the skill name or slug; agent/skill when several agents sell it',
          body: 'the JSON params as plain text',
        }
      : null,
    versioning: {
      current: versions.find((candidate) => !candidate.deprecation)?.name ?? versions.at(-1)?.name ?? 'v1',
      deprecated: versions
        .filter((candidate) => candidate.deprecation)
        .map((candidate) => ({
          version: candidate.name,
          deprecatedAt: candidate.deprecation?.deprecatedAt.toISOString(),
          sunsetAt: candidate.deprecation?.sunsetAt.toISOString(),
          successor: candidate.deprecation?.successor,
        })),
      policy: VERSIONING_POLICY,
    },
  }
}

/** A timer a probe races against; a test gives its own to see which path answered. */
export type ProbeTimer = { start(ms: number, fire: () => void): () => void }

/** How health checks probe the dependencies: each within `timeoutMs`; `chain` absent: the chain is not checked. */
export type HealthProbes = { timeoutMs: number; timer?: ProbeTimer; chain?: () => Promise<unknown> }

const systemProbeTimer: ProbeTimer = {
  start(ms, fire) {
    const timer = setTimeout(fire, ms)
    return () => clearTimeout(timer)
  },
}

/** Whether `check` answers within the probe's time; false when it fails or the timer fires first. */
function probe(check: () => Promise<unknown>, { timeoutMs, timer = systemProbeTimer }: HealthProbes) {
  return new Promise<boolean>((resolve) => {
    const cancel = timer.start(timeoutMs, () => resolve(false))
    check().then(
      (answer) => {
        cancel()
        resolve(answer !== false)
      },
      () => {
        cancel()
        resolve(false)
      },
    )
  })
}

/** The health rows' calls: SPEC's health, liveness and readiness, each probe bounded by `probes.timeoutMs`. */
function healthRoutes(deps: RouteDeps): RouteRow[] {
  const probes = deps.healthProbes ?? { timeoutMs: 1_000 }
  const uptimeSeconds = () => Math.floor((Date.now() - deps.startedAt.getTime()) / 1000)
  // Probes that arrive while one runs share it: a flood of health checks costs one database ping at a time, so it
  // neither loads the database nor makes a healthy node look unready.
  let databaseProbe: Promise<boolean> | null = null
  const database = (market: RouteDeps['market']) => {
    databaseProbe ??= probe(() => market.storeIsHealthy(), probes).finally(() => {
      databaseProbe = null
    })
    return databaseProbe
  }
  const { chain } = probes
  return [
    {
      ...HOST_FACTS.health,
      call: async (market) => {
        const healthy = await database(market)
        return {
          status: healthy ? 200 : 503,
          body: {
            status: healthy ? 'ok' : 'error',
            database: healthy ? 'ok' : 'error',
            version: deps.version,
            uptimeSeconds: uptimeSeconds(),
          },
        }
      },
    },
    {
      ...HOST_FACTS.live,
      call: async () => ({ body: { status: 'live', version: deps.version, uptimeSeconds: uptimeSeconds() } }),
    },
    {
      ...HOST_FACTS.ready,
      call: async (market) => {
        const [healthy, chainUp] = await Promise.all([
          database(market),
          chain ? probe(chain, probes) : Promise.resolve(null),
        ])
        return {
          status: healthy ? 200 : 503,
          body: {
            status: healthy ? 'ready' : 'unready',
            database: healthy ? 'ok' : 'error',
            chain: chainUp === null ? 'unchecked' : chainUp ? 'ok' : 'degraded',
            version: deps.version,
          },
        }
      },
    },
  ]
}

/** The server's rows (index, health, liveness, readiness), their calls bound to the host's facts. */
export function hostRoutes(deps: RouteDeps): RouteRow[] {
  const index = apiIndex(deps)
  return [{ ...HOST_FACTS.apiIndex, call: async () => ({ body: index }) }, ...healthRoutes(deps)]
}

/** Every row the server serves under /api and /api/v1: its own and the marketplace's. */
export const serverRoutes = (deps: RouteDeps): RouteRow[] => [...hostRoutes(deps), ...MARKET_ROUTES]
