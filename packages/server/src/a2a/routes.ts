import { A2A_JWKS_PATH, a2aCardView, bearerKey, buildMarketCard, wantsA2aMediaType } from '@agentmarket/core'
import { Elysia } from 'elysia'
import { RATE_EXTENSION } from '../openapi/operation.ts'
import type { PeerSource } from '../plugins/rateLimits.ts'
import { a2aRateClass } from '../plugins/rateLimits.ts'
import type { RouteDeps } from '../routes/deps.ts'

// The A2A SDK loads on the first A2A request, not when the server starts (as the MCP SDK does).
type A2aModules = [
  typeof import('@a2a-js/sdk'),
  typeof import('./handler.ts'),
  typeof import('./transports.ts'),
]
let modules: Promise<A2aModules> | null = null
const loadA2a = () => {
  modules ??= Promise.all([import('@a2a-js/sdk'), import('./handler.ts'), import('./transports.ts')])
  return modules
}

/** The A2A part after an interface's `/rest` URL (the route's wildcard): `message:send` -> `/message:send`. */
const restPath = (params: Record<string, string>) => `/${params['*'] ?? ''}`

/**
 * The marketplace's A2A server: each listed agent's interfaces (`/a2a/agents/{name}`: JSON-RPC; `…/rest`: HTTP+JSON)
 * and the marketplace's own (`/a2a`, `/a2a/rest`), with the marketplace's card at `/.well-known/agent-card.json`.
 * An order (SendMessage) is charged as one (`payment`), every other operation as a read.
 */
export function a2aRoutes({ market, version, charge }: RouteDeps) {
  /** The A2A operations of one agent (`name` null: the marketplace's own) for one request, over either binding. */
  const agentFor = async (name: string | null, request: Request) => {
    const [{ AgentCard }, { MarketA2aHandler }, { jsonRpcAnswer, restAnswer }] = await loadA2a()
    const json =
      name === null ? buildMarketCard(market.config, version) : a2aCardView(await market.agentCard(name))
    const card = AgentCard.fromJSON(json)
    const handler = new MarketA2aHandler(market, name, card, bearerKey(request))
    return {
      jsonRpc: (body: unknown) => jsonRpcAnswer(request, body, card, handler),
      rest: (body: unknown, path: string) => restAnswer(request, body, path, card, handler),
    }
  }
  // Each POST is charged below by what it does (an order, or a read over JSON-RPC), not by its method.
  const posting = { detail: { hide: true, [RATE_EXTENSION]: 'none' } as never }
  const reading = { detail: { hide: true } }
  /** Charges an A2A POST by its operation (a2aRateClass), when the host has rate limits. */
  const charged = async (call: Call, restPath: string | null) => {
    await charge?.(a2aRateClass(call.body, restPath), call.request, call.server, call.set.headers)
  }
  // The router has decoded the name once already; decoding again would make aliases (`%2525`) and throw on `%`.
  const agentOf = (params: Record<string, string>) => params.name ?? ''
  type Call = {
    request: Request
    body?: unknown
    params: Record<string, string>
    server: PeerSource
    set: { headers: Record<string, unknown> }
  }
  return new Elysia()
    .get(
      A2A_JWKS_PATH,
      async () =>
        new Response(JSON.stringify({ keys: await market.cardKeys() }), {
          headers: { 'content-type': 'application/jwk-set+json', 'cache-control': 'public, max-age=300' },
        }),
      reading,
    )
    .get(
      '/.well-known/agent-card.json',
      async ({ request }) => {
        const card = await market.signA2aCard(buildMarketCard(market.config, version))
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
      async (call: Call) => {
        await charged(call, null)
        return (await agentFor(null, call.request)).jsonRpc(call.body)
      },
      posting,
    )
    .post(
      '/a2a/rest/*',
      async (call: Call) => {
        await charged(call, restPath(call.params))
        return (await agentFor(null, call.request)).rest(call.body, restPath(call.params))
      },
      posting,
    )
    .get(
      '/a2a/rest/*',
      async ({ request, params }: Call) => (await agentFor(null, request)).rest(undefined, restPath(params)),
      reading,
    )
    .post(
      '/a2a/agents/:name',
      async (call: Call) => {
        await charged(call, null)
        return (await agentFor(agentOf(call.params), call.request)).jsonRpc(call.body)
      },
      posting,
    )
    .post(
      '/a2a/agents/:name/rest/*',
      async (call: Call) => {
        await charged(call, restPath(call.params))
        return (await agentFor(agentOf(call.params), call.request)).rest(call.body, restPath(call.params))
      },
      posting,
    )
    .get(
      '/a2a/agents/:name/rest/*',
      async ({ request, params }: Call) =>
        (await agentFor(agentOf(params), request)).rest(undefined, restPath(params)),
      reading,
    )
}
