import { AgentCard } from '@a2a-js/sdk'
import {
  a2aCardView,
  bearerKey,
  buildMarketCard,
  type MarketplaceActions,
  wantsA2aMediaType,
} from '@agentmarket/core'
import { Elysia } from 'elysia'
import { RATE_EXTENSION } from '../openapi/operation.ts'
import type { RouteDeps } from '../routes/deps.ts'
import { MarketA2aHandler } from './handler.ts'
import { jsonRpcAnswer, restAnswer } from './transports.ts'

/** The SDK's card of an agent (A2A view), or of the marketplace's own agent (`name` null). */
async function sdkCard(market: MarketplaceActions, name: string | null, version: string) {
  const card =
    name === null ? buildMarketCard(market.config, version) : a2aCardView(await market.agentCard(name))
  return { json: card, sdk: AgentCard.fromJSON(card) }
}

/** The A2A part after an interface's `/rest` URL (the route's wildcard): `message:send` -> `/message:send`. */
const restPath = (params: Record<string, string>) => `/${params['*'] ?? ''}`

/**
 * The marketplace's A2A server: each listed agent's interfaces (`/a2a/agents/{name}`: JSON-RPC; `…/rest`: HTTP+JSON)
 * and the marketplace's own (`/a2a`, `/a2a/rest`), with the marketplace's card at `/.well-known/agent-card.json`.
 * Requests are charged as orders (`payment`) when they post, as reads otherwise.
 */
export function a2aRoutes({ market, version }: RouteDeps) {
  const handlerFor = async (name: string | null, request: Request) => {
    const card = await sdkCard(market, name, version)
    return { card: card.sdk, handler: new MarketA2aHandler(market, name, card.sdk, bearerKey(request)) }
  }
  const posting = { detail: { hide: true, [RATE_EXTENSION]: 'payment' } as never }
  const reading = { detail: { hide: true } }
  const agentOf = (params: Record<string, string>) => decodeURIComponent(params.name ?? '')
  return new Elysia()
    .get(
      '/.well-known/agent-card.json',
      ({ request }) => {
        const card = buildMarketCard(market.config, version)
        const type = wantsA2aMediaType(request.headers.get('accept'))
          ? 'application/a2a+json'
          : 'application/json'
        return new Response(JSON.stringify(card), {
          headers: { 'content-type': type, 'cache-control': 'public, max-age=300', vary: 'Accept' },
        })
      },
      reading,
    )
    .post(
      '/a2a',
      async ({ request, body }) => {
        const { card, handler } = await handlerFor(null, request)
        return jsonRpcAnswer(request, body, card, handler)
      },
      posting,
    )
    .post(
      '/a2a/rest/*',
      async ({ request, body, params }) => {
        const { card, handler } = await handlerFor(null, request)
        return restAnswer(request, body, restPath(params), card, handler)
      },
      posting,
    )
    .get(
      '/a2a/rest/*',
      async ({ request, params }) => {
        const { card, handler } = await handlerFor(null, request)
        return restAnswer(request, undefined, restPath(params), card, handler)
      },
      reading,
    )
    .post(
      '/a2a/agents/:name',
      async ({ request, body, params }) => {
        const { card, handler } = await handlerFor(agentOf(params), request)
        return jsonRpcAnswer(request, body, card, handler)
      },
      posting,
    )
    .post(
      '/a2a/agents/:name/rest/*',
      async ({ request, body, params }) => {
        const { card, handler } = await handlerFor(agentOf(params), request)
        return restAnswer(request, body, restPath(params), card, handler)
      },
      posting,
    )
    .get(
      '/a2a/agents/:name/rest/*',
      async ({ request, params }) => {
        const { card, handler } = await handlerFor(agentOf(params), request)
        return restAnswer(request, undefined, restPath(params), card, handler)
      },
      reading,
    )
}
