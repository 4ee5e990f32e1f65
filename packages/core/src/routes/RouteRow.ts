import type {
  ErrorMessage,
  ObjectEntries,
  ObjectSchema,
  StrictObjectIssue,
  StrictObjectSchema,
} from 'valibot'
import type { MarketplaceActions } from '../Marketplace.ts'
import type { RateClass } from '../RateLimit.ts'
import type { ResponseName } from './responses.ts'

/**
 * How an operation is authenticated: nothing, the agent's API key, a wallet proof, either of the key and the owner's
 * wallet proof (`bearerOrWalletSignature`), a machine payment, or a task webhook endpoint's own secret
 * (`webhookSecret`: `Authorization: Bearer whsec_…`, answered once to whoever added the endpoint).
 */
export type RouteAuth =
  | 'none'
  | 'bearer'
  | 'walletSignature'
  | 'walletAddressSignature'
  | 'bearerOrWalletSignature'
  | 'mpp'
  | 'webhookSecret'

/** The groups operations are listed under in the OpenAPI document. */
export type RouteTag = 'Discovery' | 'Agents' | 'Users' | 'Feed' | 'Tasks'

/** A valibot object schema of a body or query, the one kind a route reads (strict: unknown fields are a 400). */
export type InputSchema =
  | ObjectSchema<ObjectEntries, undefined>
  | StrictObjectSchema<ObjectEntries, ErrorMessage<StrictObjectIssue> | undefined>

/** A successful answer of an operation: its status, the name of its response schema, and what it means. */
export type RouteAnswerSpec = {
  status: number
  /** The name of its schema in RESPONSE_SCHEMAS (a component of the OpenAPI document). */
  response: ResponseName
  description: string
  /** It carries Retry-After (a payment not final yet). */
  retryAfter?: boolean
  /** It may also be a text/event-stream. */
  eventStream?: boolean
}

/**
 * What one call of an operation is given, whatever carried it (HTTP, a fetch handler, an MCP tool call). Hosts may
 * compute parts lazily (getters), so read only what the operation needs, and call `client` and `admitStream` as
 * methods of the call.
 */
export type RouteCall = {
  /** The path's parameters, decoded (`{name}` → `params.name`). */
  params: Record<string, string>
  /** The query string, or an MCP tool's arguments, as read by the action's own schema. */
  query: Record<string, unknown>
  /** The JSON body (or the MCP arguments besides the path's), absent when none was sent. */
  body: Record<string, unknown> | undefined
  /** The request's headers (empty for MCP). */
  headers: Headers
  /** The `Authorization: Bearer` key, if any. */
  apiKey: string | undefined
  /** The web request, when the call came over HTTP: machine payments and wallet proofs read it. */
  request: Request | null
  /** The body's exact bytes (a wallet proof signs their digest); undefined without a body. */
  rawBody: Uint8Array | undefined
  /** The client's address as rate limits see it (it scopes Idempotency-Keys); null when unknown. */
  client(): string | null
  /**
   * Admits a long-lived answer (the feed stream) and returns its release; throws (429) when the host holds too many.
   * Hosts without such limits leave it out.
   */
  admitStream?(): () => void
  /**
   * Spends one more token of `rateClass` for this client (its address and API key), beside the row's own class;
   * throws RateLimitedError (429) when none is left. Hosts without rate limits leave it out.
   */
  charge?(rateClass: RateClass): void | Promise<void>
}

/** A JSON answer: the body, its status (default: the row's `ok` status) and extra headers. */
export type RouteJson = { status?: number; body: unknown; headers?: Record<string, string> }

/** What an operation answers: JSON for the host to send, or a whole web Response (a 402 challenge, a stream). */
export type RouteReply = RouteJson | Response

/** An extra header an operation reads, besides those of its auth. */
export type RouteHeader = { name: string; description: string; required: boolean }

/** How an MCP tool names one of the path's parameters, and describes it. */
export type ToolArgument = {
  name: string
  description: string
  /** Former names still accepted (deprecated), never advertised in the tool's input schema. */
  aliases?: readonly string[]
}

/** The MCP tool an operation is also offered as. */
export type RouteTool = {
  name: string
  description: string
  /** The tool's argument for each path parameter (`{id}` → `task_id`). */
  params: Record<string, ToolArgument>
  /**
   * A POST whose repetition with the same arguments changes nothing more (a heartbeat, a completed delivery): the
   * tool's idempotentHint. GET and PUT are idempotent by their method.
   */
  idempotent?: boolean
}

/**
 * One operation, stated once: every host (Elysia, `createFetchHandler`, MCP) and every listing (the OpenAPI document,
 * the `/api` index, the rate classes) is derived from its row.
 */
export type RouteRow = {
  /** The OpenAPI operationId. */
  id: string
  method: 'GET' | 'POST' | 'PUT' | 'DELETE'
  /** The path under `/api` (and `/api/v1`), with `{param}` segments. */
  path: string
  summary: string
  /** What a client should know before calling it: who may, what it does, what it answers (the operation's description). */
  description: string
  tag: RouteTag
  auth: RouteAuth
  /** A credential the operation reads when one is sent, without needing it (a seller's key on a public list). */
  optionalAuth?: RouteAuth
  /** The rate-limit bucket a request spends; default `read` for GET, `write` otherwise; `none` when it charges itself. */
  rate?: RateClass | 'none'
  body?: InputSchema
  /** The body may be left out (PUT with nothing to change). */
  bodyOptional?: boolean
  query?: InputSchema
  ok: RouteAnswerSpec
  /** Other successful answers (a 202 while a payment is not final). */
  alsoOk?: RouteAnswerSpec[]
  /** The problem statuses it may answer, besides 429. */
  problems: number[]
  headers?: RouteHeader[]
  /** The Cache-Control of a read answered with a content ETag (304 to If-None-Match). */
  etag?: string
  /** The core hands out the same object while its read cache holds it, so a host may serialize it once. */
  cachedRead?: boolean
  tool?: RouteTool
  /**
   * How a retry of this write under the same Idempotency-Key is kept from acting twice. `host` (the default for every
   * non-GET row): the route layer keeps the first successful answer per client and replays it
   * (`routes/idempotentRows.ts`); `action`: the action keeps the key with what it creates, in one transaction
   * (orders); `credential`: the payment credential is the key (a machine payment's retry answers the same task).
   */
  idempotency?: 'host' | 'action' | 'credential'
  /** The answer holds a secret shown once (an API key, a pairing code, a webhook secret): replayed 10 minutes only. */
  shownOnce?: boolean
  /**
   * Its secret is kept for a replay whatever the client's quota of kept answers: only an API key (nobody but the
   * owner can issue another), on a row creating at most 10 an hour per client (`idempotentWrites.test.ts` checks).
   */
  secretPastQuota?: true
  /**
   * True for a call that reaches no payment chain and writes nothing (an order without a payment, answered by a 402):
   * it runs outside the request's scope (its chain budget and write count), whose opening costs every await of the
   * request. A call it does not name runs in the scope as every other.
   */
  scopeFree?(call: RouteCall): boolean
  /** Calls the core action. */
  call(market: MarketplaceActions, call: RouteCall): Promise<RouteReply>
}

/**
 * The rate class a request spends: its route's own, else `read` for GET, HEAD and OPTIONS and `write` otherwise;
 * null when its handler charges itself (`none`).
 */
export function rateClassOf(route: {
  method: string
  rate?: RateClass | 'none' | undefined
}): RateClass | null {
  if (route.rate === 'none') return null
  return route.rate ?? (['GET', 'HEAD', 'OPTIONS'].includes(route.method) ? 'read' : 'write')
}

/** The full path of a row as clients call it (`/api/agents/{name}`). */
export const apiPathOf = (row: Pick<RouteRow, 'path'>) => `/api${row.path}`
