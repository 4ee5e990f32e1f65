import {
  InvalidInputError,
  MARKET_ROUTES,
  type MarketplaceActions,
  type RateClass,
  type RouteRow,
} from '@agentmarket/core'
import * as v from 'valibot'

/** What a tool call may use besides its arguments: the MCP request's bearer key, if any, client address and id. */
export type ToolContext = {
  apiKey: string | undefined
  client: string | null
  requestId?: string | undefined
  /** Spends one more token of a rate class for this client (a registration that would create an agent). */
  charge?: ((rateClass: RateClass) => void | Promise<void>) | undefined
}

/** One MCP tool: its name, what it does, its arguments' schema, and the core action it calls. */
export type Tool = {
  name: string
  description: string
  input: v.ObjectSchema<v.ObjectEntries, undefined>
  run(args: Record<string, unknown>, context: ToolContext): Promise<unknown>
}

/** The rows offered as tools: every operation of the route table with a `tool`. */
const TOOL_ROWS = MARKET_ROUTES.filter((row) => row.tool)

/** The string argument `key`, or a 400 pointing at it. */
function text(args: Record<string, unknown>, key: string): string {
  const value = args[key]
  if (typeof value === 'string' && value.length > 0) return value
  throw new InvalidInputError(
    'invalid_body',
    `The arguments are invalid (/${key}: must be a non-empty string).`,
    [{ pointer: `/${key}`, detail: 'must be a non-empty string' }],
  )
}

/** A row as a tool: its path parameters and body (or query) fields as arguments, its core call as the run. */
function toolOf(market: MarketplaceActions, row: RouteRow): Tool {
  const tool = row.tool as NonNullable<RouteRow['tool']>
  const params = Object.entries(tool.params)
  const input = v.object({
    ...Object.fromEntries(
      params.map(([, argument]) => [argument.name, v.pipe(v.string(), v.description(argument.description))]),
    ),
    ...(row.body ?? row.query)?.entries,
  })
  const pathArgs = new Set(params.map(([, argument]) => argument.name))
  return {
    name: tool.name,
    description: tool.description,
    input,
    async run(args, context) {
      const rest = Object.fromEntries(Object.entries(args).filter(([key]) => !pathArgs.has(key)))
      const reply = await row.call(market, {
        params: Object.fromEntries(params.map(([param, argument]) => [param, text(args, argument.name)])),
        query: rest,
        body: rest,
        headers: new Headers(),
        apiKey: context.apiKey,
        request: null,
        rawBody: undefined,
        client: () => context.client,
        charge: (rateClass) => context.charge?.(rateClass),
      })
      return reply instanceof Response ? reply.json() : reply.body
    },
  }
}

/** Every tool, each calling its operation's row: the same core call as its HTTP route. */
export function marketTools(market: MarketplaceActions): Tool[] {
  return TOOL_ROWS.map((row) => toolOf(market, row))
}

/** The bucket a call of each tool spends: its operation's own class, else `write`. */
export const TOOL_RATE_CLASSES: ReadonlyMap<string, RateClass> = new Map(
  TOOL_ROWS.map((row) => [
    row.tool?.name ?? '',
    row.rate && row.rate !== 'none' ? row.rate : ('write' as RateClass),
  ]),
)
