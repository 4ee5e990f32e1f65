import type { MarketplaceActions } from '@agentmarket/core'
import type { RateClass } from '@agentmarket/core/routes'
import type { Logger } from '../log.ts'

/** Spends one more token of a rate class for the request's client (see RouteCall.charge). */
export type Charge = (rateClass: RateClass) => void | Promise<void>

/**
 * An MCP request handler: the web request, its parsed JSON body, the client's address and how to charge it more in,
 * the answer out.
 */
type McpHandler = (
  request: Request,
  parsedBody: unknown,
  client?: string,
  charge?: Charge,
) => Promise<Response>

/**
 * The MCP endpoint, with the SDK (and its schema libraries) loaded on the first MCP request rather than at start-up:
 * most servers start far more often than an MCP client calls them.
 */
export function lazyMcpHandler(market: MarketplaceActions, guide: string, logger?: Logger): McpHandler {
  let handler: Promise<McpHandler> | null = null
  return async (request, parsedBody, client, charge) => {
    handler ??= import('./server.ts').then(({ mcpHandler }) => mcpHandler(market, guide, logger))
    return (await handler)(request, parsedBody, client, charge)
  }
}

/** The answer to GET and DELETE /mcp: this endpoint keeps no sessions and streams nothing. */
export function mcpMethodNotAllowed(): Response {
  return Response.json(
    {
      jsonrpc: '2.0',
      error: { code: -32000, message: 'Method not allowed: this endpoint is stateless, use POST.' },
      id: null,
    },
    { status: 405, headers: { allow: 'POST' } },
  )
}
