import type { RouteAuth, RouteRow } from '@agentmarket/core/routes'
import type { DocumentDecoration } from 'elysia'
import type { GenericSchema } from 'valibot'
import { jsonSchemaOf } from './jsonSchema.ts'

/** What one route tells the OpenAPI document: its row without the call. Validation stays in the core. */
export type OperationSpec = Omit<RouteRow, 'call'>

type Parameter = Extract<NonNullable<DocumentDecoration['parameters']>[number], { in: string }>
// Elysia types `detail` with OpenAPI 3.0 objects; our schemas are 3.1 (JSON Schema 2020-12).
type OpenApiSchema = NonNullable<Parameter['schema']>

const PROBLEM_TEXT: Record<number, string> = {
  400: 'Invalid body, query or parameter; `errors` points at each bad field.',
  401: 'Missing or invalid credentials; see WWW-Authenticate.',
  403: 'Valid credentials that may not act here.',
  404: 'No such agent, user, task or code.',
  409: 'Conflicts with the current state (a taken name, a used code or tx hash, a task in another state).',
  402: 'Payment required: the WWW-Authenticate Payment challenge says what to pay.',
  413: 'Body over 64 KiB.',
  415: 'Body is not application/json.',
  422: 'The payment was checked on chain and is wrong; `code` says why.',
  503: 'A dependency (the database or the payment chain) is unavailable; nothing changed. See Retry-After.',
}

const header = (description: string, type: 'integer' | 'string') => ({ description, schema: { type } })

// Every operation may be throttled (SPEC.md); the limits are in SECURITY.md.
const TOO_MANY_REQUESTS = {
  description:
    'Too many requests of this kind from this address or API key; nothing changed. See Retry-After.',
  headers: {
    'Retry-After': header('Seconds until the request would be allowed.', 'integer'),
    'RateLimit-Policy': header('The quota: `"name";q=requests;w=seconds` (IETF draft).', 'string'),
    RateLimit: header('What is left: `"name";r=remaining;t=seconds until full` (IETF draft).', 'string'),
  },
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
}

/** The OpenAPI extension naming the rate-limit bucket of an operation; `none` when its handler charges itself. */
export const RATE_EXTENSION = 'x-rate-limit'

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` }) as OpenApiSchema

function queryParameters(schema: GenericSchema): Parameter[] {
  const object = jsonSchemaOf(schema)
  return Object.entries(object.properties ?? {}).map(([name, property]) => ({
    name,
    in: 'query' as const,
    required: object.required?.includes(name) ?? false,
    schema: property as OpenApiSchema,
  }))
}

// `security: []` says "public"; an empty requirement `{}` among others says "or nothing".
const SECURITY: Record<RouteAuth, Record<string, string[]>[]> = {
  none: [],
  mpp: [{ payment: [] }, { x402: [] }],
  bearer: [{ bearer: [] }],
  walletSignature: [{ walletSignature: [], walletTimestamp: [] }],
  walletAddressSignature: [{ walletAddress: [], walletSignature: [], walletTimestamp: [] }],
  // Alternatives: either one suffices.
  bearerOrWalletSignature: [{ bearer: [] }, { walletSignature: [], walletTimestamp: [] }],
  webhookSecret: [{ webhookSecret: [] }],
}

/** The security requirements of a row: its own, or, with an optional credential, that credential or nothing. */
export function securityOf(row: Pick<RouteRow, 'auth' | 'optionalAuth'>): Record<string, string[]>[] {
  if (row.auth === 'none' && row.optionalAuth) return [{}, ...SECURITY[row.optionalAuth]]
  return SECURITY[row.auth]
}

/**
 * The `detail` hook of a route: its OpenAPI operation, request and answers built from valibot schemas.
 * @example app.route('PUT', '/agents/:name', handler, operation(row))
 */
export function operation(spec: OperationSpec): { detail: DocumentDecoration } {
  const { ok } = spec
  const okContent: Record<string, { schema: OpenApiSchema }> = {
    'application/json': { schema: ref(ok.response) },
  }
  if (ok.eventStream) okContent['text/event-stream'] = { schema: { type: 'string' } as OpenApiSchema }
  const responses: Record<string, unknown> = {
    [ok.status]: { description: ok.description, content: okContent },
  }
  for (const other of spec.alsoOk ?? []) {
    responses[other.status] = {
      description: other.description,
      content: { 'application/json': { schema: ref(other.response) } },
      ...(other.retryAfter
        ? {
            headers: {
              'Retry-After': {
                description: 'Seconds until asking again is worthwhile.',
                schema: { type: 'integer' },
              },
            },
          }
        : {}),
    }
  }
  for (const status of spec.problems) {
    responses[status] = {
      description: PROBLEM_TEXT[status] ?? 'Problem',
      content: { 'application/problem+json': { schema: ref('Problem') } },
    }
  }
  responses[429] = TOO_MANY_REQUESTS
  const parameters: Parameter[] = [
    ...(spec.query ? queryParameters(spec.query) : []),
    ...(spec.headers ?? []).map((header) => ({
      name: header.name,
      in: 'header' as const,
      required: header.required,
      description: header.description,
      schema: { type: 'string' } as OpenApiSchema,
    })),
  ]
  const detail = {
    operationId: spec.id,
    summary: spec.summary,
    description: spec.description,
    // The route's own fact: the rate limiter reads it from the matched route, whatever alias reached it.
    ...(spec.rate ? { [RATE_EXTENSION]: spec.rate } : {}),
    tags: [spec.tag],
    security: securityOf(spec),
    ...(parameters.length ? { parameters } : {}),
    ...(spec.body
      ? {
          requestBody: {
            required: !spec.bodyOptional,
            content: { 'application/json': { schema: jsonSchemaOf(spec.body) as OpenApiSchema } },
          },
        }
      : {}),
    responses,
  }
  return { detail: detail as DocumentDecoration }
}
