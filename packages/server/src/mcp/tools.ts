import { InvalidInputError, MARKET_ROUTES, type MarketplaceActions } from '@agentmarket/core'
import { type RateClass, RESPONSE_SCHEMAS, type RouteRow, type ToolArgument } from '@agentmarket/core/routes'
import type { JsonSchema } from '@valibot/to-json-schema'
import * as v from 'valibot'
import { jsonSchemaOf } from '../openapi/jsonSchema.ts'
import type { Charge } from './http.ts'

/** What a tool call may use besides its arguments: the MCP request's bearer key, if any, client address and id. */
export type ToolContext = {
  apiKey: string | undefined
  client: string | null
  requestId?: string | undefined
  /** Spends one more token of a rate class for this client (a registration that would create an agent); absent: no limits. */
  charge?: Charge | undefined
}

/** What a tool tells clients about its effects (MCP ToolAnnotations), derived from its operation's row. */
export type ToolAnnotations = {
  readOnlyHint: boolean
  destructiveHint: boolean
  idempotentHint: boolean
  openWorldHint: boolean
}

/** One MCP tool: its name, what it does, its arguments' schema, its effects, its answer's schema, and its call. */
export type Tool = {
  name: string
  description: string
  input: v.ObjectSchema<v.ObjectEntries, undefined>
  annotations: ToolAnnotations
  /** The JSON Schema of what a successful call answers (its `structuredContent`). */
  outputSchema(): { type: 'object' } & JsonSchema
  run(args: Record<string, unknown>, context: ToolContext): Promise<Record<string, unknown>>
}

/** The rows offered as tools: every operation of the route table with a `tool`. */
const TOOL_ROWS = MARKET_ROUTES.filter((row) => row.tool)

/** A 400 pointing at the argument `key`. */
function badArgument(key: string, detail: string): InvalidInputError {
  return new InvalidInputError('invalid_body', `The arguments are invalid (/${key}: ${detail}).`, [
    { pointer: `/${key}`, detail },
  ])
}

/**
 * The string argument `argument` names, under its name or a deprecated alias: a 400 when missing, or when an alias
 * disagrees with the name (which one was meant is not ours to guess).
 */
function pathArgument(args: Record<string, unknown>, argument: ToolArgument): string {
  const given = [argument.name, ...(argument.aliases ?? [])].filter((key) => args[key] !== undefined)
  for (const key of given)
    if (typeof args[key] !== 'string' || args[key] === '')
      throw badArgument(key, 'must be a non-empty string')
  const [first, ...others] = given
  const conflict = others.find((key) => args[key] !== args[first ?? ''])
  if (conflict)
    throw badArgument(conflict, `is the former name of "${argument.name}"; send only "${argument.name}"`)
  if (first === undefined) throw badArgument(argument.name, 'must be a non-empty string')
  return args[first] as string
}

/**
 * The effects of a row's tool: GET reads only; PUT replaces what it names (destructive, idempotent); POST adds
 * (idempotent when the row says a repeat changes nothing more). Operations that may query the payment chain
 * (rate `payment`) reach beyond the marketplace.
 */
export function annotationsOf(row: RouteRow): ToolAnnotations {
  const read = row.method === 'GET'
  return {
    readOnlyHint: read,
    destructiveHint: row.method === 'PUT' || row.method === 'DELETE',
    idempotentHint: read || row.method === 'PUT' || row.method === 'DELETE' || row.tool?.idempotent === true,
    openWorldHint: row.rate === 'payment',
  }
}

/** The JSON Schema of a row's successful answers: its answer schema, or any of them when it has several. */
function outputSchemaOf(row: RouteRow): { type: 'object' } & JsonSchema {
  const schemas = [row.ok, ...(row.alsoOk ?? [])].map((ok) => jsonSchemaOf(RESPONSE_SCHEMAS[ok.response]))
  const [only] = schemas
  if (schemas.length === 1 && only) return { ...only, type: 'object' }
  return { type: 'object', anyOf: schemas }
}

/** The tool argument that carries what HTTP sends as the Idempotency-Key header. */
const IDEMPOTENCY_ARGUMENT = 'idempotency_key'

const IdempotencyArgument = v.optional(
  v.pipe(
    v.string(),
    v.description(
      'As the HTTP header Idempotency-Key (1-255 visible ASCII characters): a retry with the same key and arguments gets the first answer again instead of acting twice.',
    ),
  ),
)

/** A write whose tool takes the key: every one but machine payments (whose credential is the key). */
const takesKey = (row: RouteRow) => row.method !== 'GET' && row.idempotency !== 'credential'

/** The headers a tool call carries: only the Idempotency-Key, when the arguments hold one. */
function keyHeaders(key: unknown): Headers {
  if (key === undefined) return new Headers()
  // Checked here: a header cannot carry every string; the core checks the same rule for HTTP's header.
  if (typeof key !== 'string' || !/^[\x21-\x7e]{1,255}$/.test(key))
    throw badArgument(IDEMPOTENCY_ARGUMENT, 'must be 1-255 visible ASCII characters')
  return new Headers({ 'idempotency-key': key })
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
    ...(takesKey(row) && { [IDEMPOTENCY_ARGUMENT]: IdempotencyArgument }),
  })
  const pathArgs = new Set(params.flatMap(([, argument]) => [argument.name, ...(argument.aliases ?? [])]))
  pathArgs.add(IDEMPOTENCY_ARGUMENT)
  let output: ({ type: 'object' } & JsonSchema) | undefined
  return {
    name: tool.name,
    description: tool.description,
    input,
    annotations: annotationsOf(row),
    outputSchema: () => (output ??= outputSchemaOf(row)),
    async run(args, context) {
      const rest = Object.fromEntries(Object.entries(args).filter(([key]) => !pathArgs.has(key)))
      const reply = await row.call(market, {
        params: Object.fromEntries(params.map(([param, argument]) => [param, pathArgument(args, argument)])),
        query: rest,
        body: rest,
        headers: keyHeaders(args[IDEMPOTENCY_ARGUMENT]),
        apiKey: context.apiKey,
        request: null,
        rawBody: undefined,
        client: () => context.client,
        ...(context.charge ? { charge: context.charge } : {}),
      })
      return (reply instanceof Response ? await reply.json() : reply.body) as Record<string, unknown>
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
