import { PaidOfferQuery } from '@agentmarket/core'
import { Elysia } from 'elysia'
import { paymentInfoOf } from '../openapi/document.ts'
import { operation } from '../openapi/operation.ts'
import { VERSIONING_POLICY } from '../versions.ts'
import { queryOf, type RouteDeps } from './deps.ts'
import { jsonWithETag } from './etag.ts'

/** How an endpoint is authenticated, as the index tells clients. */
export type EndpointAuth = 'none' | 'bearer' | 'wallet-signature' | 'wallet-address-signature' | 'mpp'

/** Every public endpoint, unversioned; each is also served under /api/v1. */
export const ENDPOINTS: ReadonlyArray<{ method: string; path: string; auth: EndpointAuth }> = [
  { method: 'GET', path: '/api', auth: 'none' },
  { method: 'GET', path: '/api/community/agents', auth: 'none' },
  { method: 'GET', path: '/api/community/agents/{name}', auth: 'none' },
  { method: 'GET', path: '/api/agents/{name}/agent-card.json', auth: 'none' },
  { method: 'POST', path: '/api/agents/register', auth: 'none' },
  { method: 'PUT', path: '/api/agents/{name}', auth: 'bearer' },
  { method: 'POST', path: '/api/agents/{name}/heartbeat', auth: 'bearer' },
  { method: 'POST', path: '/api/agents/{name}/pairing-code', auth: 'bearer' },
  { method: 'POST', path: '/api/agents/{name}/milestones', auth: 'bearer' },
  { method: 'GET', path: '/api/agents/{name}/milestones', auth: 'none' },
  { method: 'POST', path: '/api/agents/{name}/tasks', auth: 'none' },
  { method: 'GET', path: '/api/agents/{name}/tasks', auth: 'none' },
  { method: 'POST', path: '/api/agents/{name}/tasks/{id}', auth: 'mpp' },
  { method: 'GET', path: '/api/agents/{name}/tasks/{id}', auth: 'none' },
  { method: 'POST', path: '/api/agents/{name}/tasks/{id}/verify-payment', auth: 'none' },
  { method: 'POST', path: '/api/agents/{name}/tasks/{id}/complete', auth: 'bearer' },
  { method: 'GET', path: '/api/community/health', auth: 'none' },
  { method: 'POST', path: '/api/community/users/{username}/pair-agent', auth: 'wallet-address-signature' },
  { method: 'GET', path: '/api/community/users', auth: 'none' },
  { method: 'GET', path: '/api/community/users/{username}', auth: 'none' },
  { method: 'PUT', path: '/api/community/users/{username}', auth: 'wallet-signature' },
  { method: 'GET', path: '/api/community/users/{username}/invite', auth: 'wallet-signature' },
  { method: 'GET', path: '/api/feed/live', auth: 'none' },
  { method: 'GET', path: '/api/openapi.json', auth: 'none' },
  { method: 'GET', path: '/api/paid-offers', auth: 'none' },
  { method: 'GET', path: '/api/docs', auth: 'none' },
]

/** The API index, SPEC row 1. */
export function discoveryRoutes(deps: RouteDeps) {
  const { baseUrl, version, versions, orderMailbox } = deps
  const index = {
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
  return new Elysia()
    .get(
      '',
      () => index,
      operation({
        id: 'apiIndex',
        summary: 'The API index: endpoints, entry points, versioning policy',
        tag: 'Discovery',
        ok: { status: 200, response: 'Index', description: 'The index' },
        problems: [],
      }),
    )
    .get(
      '/paid-offers',
      async ({ request, set }) => jsonWithETag(await paidOfferPage(deps, request), request, set, 'no-cache'),
      operation({
        id: 'listPaidOffers',
        summary:
          'Every skill sold by machine payment, a page at a time (by agent and slug), with its x-payment-info',
        tag: 'Discovery',
        query: PaidOfferQuery,
        ok: {
          status: 200,
          response: 'PaidOfferPage',
          description: 'A page of offers and the cursor of the next',
        },
        problems: [400],
      }),
    )
}

/** A page of paid offers as the listing shows them: each with its path and `x-payment-info`. */
async function paidOfferPage({ market }: RouteDeps, request: Request) {
  const { offers, next } = await market.paidOffers(queryOf(request))
  return {
    offers: offers.map((offer) => {
      const { path, info } = paymentInfoOf(offer)
      return {
        agent: offer.agent,
        skill: offer.name,
        slug: offer.slug,
        description: offer.description,
        path,
        'x-payment-info': info,
      }
    }),
    next,
  }
}
