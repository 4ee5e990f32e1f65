import { A2A_JWKS_PATH, a2aCardView, buildMarketCard, wantsA2aMediaType } from '@agentmarket/core'
import { bearerKey, idempotencyOwners, idempotencyScope } from '@agentmarket/core/routes'
import { Elysia } from 'elysia'
import { RATE_EXTENSION } from '../openapi/operation.ts'
import { parseJsonBody } from '../plugins/jsonBody.ts'
import type { PeerSource } from '../plugins/rateLimits.ts'
import { a2aRateClass, a2aTokens } from '../plugins/rateLimits.ts'
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
 * Each request spends the rate class the A2A table (`methods.ts`) gives its operation.
 */
export function a2aRoutes({ market, version, charge, clientOf }: RouteDeps) {
  /** The A2A operations of one agent (`name` null: the marketplace's own) for one request, over either binding. */
  const agentFor = async (name: string | null, request: Request, server: PeerSource) => {
    const [{ AgentCard }, { MarketA2aHandler }, { jsonRpcAnswer, restAnswer }] = await loadA2a()
    const json =
      name === null ? buildMarketCard(market.config, version) : a2aCardView(await market.agentCard(name))
    const card = AgentCard.fromJSON(json)
    const apiKey = bearerKey(request)
    // A retried SendMessage is known by its messageId within this scope: the same client, credential and interface.
    const client = clientOf(request, server)
    const scope = idempotencyScope(
      { client, headers: request.headers, apiKey },
      `A2A SendMessage ${name?.toLowerCase() ?? ''}`,
    )
    const owners = idempotencyOwners({ client, apiKey })
    const handler = (idempotencyKey: string | null) =>
      new MarketA2aHandler(market, name, card, apiKey, { scope, owners, idempotencyKey })
    return {
      jsonRpc: (body: unknown) => jsonRpcAnswer(request, body, card, handler(null)),
      // HTTP+JSON is plain HTTP: an Idempotency-Key header, when sent, names the retry instead of the messageId.
      rest: (body: unknown, path: string) =>
        restAnswer(request, body, path, card, handler(request.headers.get('idempotency-key'))),
    }
  }
  // Each A2A request is charged below by its operation (the A2A table's rate class), not by its HTTP method.
  const charging = { detail: { hide: true, [RATE_EXTENSION]: 'none' } as never, parse: parseJsonBody }
  const reading = { detail: { hide: true } }
  /** Charges an A2A request by its operation (a2aRateClass, a2aTokens), when the host has rate limits. */
  const charged = async (call: Call, restPath: string | null) => {
    if (!charge) return
    const { method, url } = call.request
    const rateClass = a2aRateClass(method, call.body, restPath)
    await charge(
      rateClass,
      call.request,
      call.server,
      call.set.headers,
      a2aTokens(method, call.body, restPath, url),
    )
  }
  /** One interface's JSON-RPC binding (`name` null: the marketplace's), charged first. */
  const jsonRpc = (name: (call: Call) => string | null) => async (call: Call) => {
    await charged(call, null)
    return (await agentFor(name(call), call.request, call.server)).jsonRpc(call.body)
  }
  /** One interface's HTTP+JSON binding, charged first. */
  const rest = (name: (call: Call) => string | null) => async (call: Call) => {
    const path = restPath(call.params)
    await charged(call, path)
    return (await agentFor(name(call), call.request, call.server)).rest(call.body, path)
  }
  // The router has decoded the name once already; decoding again would make aliases (`%2525`) and throw on `%`.
  const agentOf = (call: Call) => call.params.name ?? ''
  const marketplaceOf = () => null
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
    .post('/a2a', jsonRpc(marketplaceOf), charging)
    .post('/a2a/rest/*', rest(marketplaceOf), charging)
    .get('/a2a/rest/*', rest(marketplaceOf), charging)
    .delete('/a2a/rest/*', rest(marketplaceOf), charging)
    .post('/a2a/agents/:name', jsonRpc(agentOf), charging)
    .post('/a2a/agents/:name/rest/*', rest(agentOf), charging)
    .get('/a2a/agents/:name/rest/*', rest(agentOf), charging)
    .delete('/a2a/agents/:name/rest/*', rest(agentOf), charging)
}
