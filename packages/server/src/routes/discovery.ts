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
export const HOST_FACTS: Record<'apiIndex' | 'health', Omit<RouteRow, 'call'>> = {
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
}

/** The documents served beside the operations. */
const DOCUMENTS = [
  { method: 'GET', path: '/api/openapi.json', auth: 'none' },
  { method: 'GET', path: '/api/docs', auth: 'none' },
] as const

/** Every public endpoint, unversioned, from the route table; each is also served under /api/v1. */
export const ENDPOINTS: ReadonlyArray<{ method: string; path: string; auth: EndpointAuth }> = [
  ...[HOST_FACTS.apiIndex, ...MARKET_ROUTES, HOST_FACTS.health].map((row) => ({
    method: row.method,
    path: apiPathOf(row),
    auth: INDEX_AUTH[row.auth],
  })),
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

/** The server's rows (index, health), their calls bound to the host's facts. */
export function hostRoutes(deps: RouteDeps): RouteRow[] {
  const index = apiIndex(deps)
  return [
    { ...HOST_FACTS.apiIndex, call: async () => ({ body: index }) },
    {
      ...HOST_FACTS.health,
      call: async (market) => {
        const healthy = await market.storeIsHealthy()
        return {
          status: healthy ? 200 : 503,
          body: {
            status: healthy ? 'ok' : 'error',
            database: healthy ? 'ok' : 'error',
            version: deps.version,
            uptimeSeconds: Math.floor((Date.now() - deps.startedAt.getTime()) / 1000),
          },
        }
      },
    },
  ]
}

/** Every row the server serves under /api and /api/v1: its own and the marketplace's. */
export const serverRoutes = (deps: RouteDeps): RouteRow[] => [...hostRoutes(deps), ...MARKET_ROUTES]
