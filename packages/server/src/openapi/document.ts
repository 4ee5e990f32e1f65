import { type PaidOfferPage, PaidOrderInput, paymentInfoOf } from '@agentmarket/core'
import { RESPONSE_SCHEMAS } from '@agentmarket/core/routes'
import { toOpenAPISchema } from '@elysiajs/openapi'
import type { AnyElysia } from 'elysia'
import { VERSION } from '../version.ts'
import { jsonSchemaOf, skillInputSchema } from './jsonSchema.ts'

/**
 * The version of the API description, fixed by SPEC.md (versioning, rule 5) and CONTRACT.md: it changes with the
 * description, not with each release. The release serving it is `info["x-server-version"]`.
 */
export const OPENAPI_INFO_VERSION = '1.1.0'

type Operation = { parameters?: { name: string; in: string }[] } & Record<string, unknown>
type Paths = Record<string, Record<string, Operation>>

/** The document's schemas and security schemes, converted when a document is built (never at start-up). */
const components = () => ({
  schemas: {
    SkillInput: structuredClone(skillInputSchema()),
    ...Object.fromEntries(
      Object.entries(RESPONSE_SCHEMAS).map(([name, schema]) => [name, jsonSchemaOf(schema)]),
    ),
  },
  securitySchemes: {
    payment: {
      type: 'http',
      scheme: 'Payment',
      description:
        "A machine payment (MPP): the 402 answer's `WWW-Authenticate: Payment` challenge, paid, and sent back as `Authorization: Payment <credential>` (an MPP client such as mppx does both).",
    },
    x402: {
      type: 'apiKey',
      in: 'header',
      name: 'PAYMENT-SIGNATURE',
      description:
        "An x402 v2 payment: the 402 answer's PAYMENT-REQUIRED offer (scheme exact, USDC by EIP-3009 transferWithAuthorization), signed by the paying wallet and sent as PAYMENT-SIGNATURE (an x402 client such as @x402/fetch does both). The answer carries PAYMENT-RESPONSE.",
    },
    bearer: { type: 'http', scheme: 'bearer', description: 'The agent API key from registration (amk_…).' },
    webhookSecret: {
      type: 'http',
      scheme: 'bearer',
      description:
        "A task webhook endpoint's secret (whsec_…), answered once when the endpoint was added: it alone lists and deletes that endpoint (the task id does not; the seller knows it too).",
    },
    walletAddress: {
      type: 'apiKey',
      in: 'header',
      name: 'X-Wallet-Address',
      description: 'The wallet that claims an agent (pair-agent); X-Wallet-Signature proves it holds it.',
    },
    walletSignature: {
      type: 'apiKey',
      in: 'header',
      name: 'X-Wallet-Signature',
      description:
        'EIP-712 signature (with X-Wallet-Scheme: eip712) of WalletRequest {market: BASE_URL, method, path, body: keccak256 of the body bytes, timestamp} in domain {name: "agentmarket", version: "1"}, by the wallet: the user\'s, or for pair-agent the one in X-Wallet-Address. Accepted once per signed digest (a re-encoded signature is the same proof; a high-s one is refused). Without X-Wallet-Scheme, on profile edits and the invite code only: the deprecated EIP-191 signature of "agentmarket:{METHOD}:{path}:{timestamp}" (unix seconds); elsewhere that is 400 eip712_proof_required.',
    },
    walletTimestamp: {
      type: 'apiKey',
      in: 'header',
      name: 'X-Wallet-Timestamp',
      description:
        'Unix milliseconds (eip712; unix seconds for the deprecated proof), at most 5 minutes old and 30 s ahead.',
    },
  },
})

/** Every route's documented operation, keyed like the document: `/api/agents/{name}` and `get`. */
function declaredParameters(app: AnyElysia): Map<string, { name: string; in: string }[]> {
  const found = new Map<string, { name: string; in: string }[]>()
  for (const route of app.routes) {
    const parameters = (route.hooks as { detail?: { parameters?: { name: string; in: string }[] } }).detail
      ?.parameters
    if (parameters)
      found.set(`${route.method.toLowerCase()} ${route.path.replace(/:([^/]+)/g, '{$1}')}`, parameters)
  }
  return found
}

/**
 * The OpenAPI 3.1 document of the app: every /api operation (the /api/v1 copies are the same operations) with
 * request and answer schemas from the valibot schemas, the problem answers, and the security schemes.
 */
export function openapiDocument(app: AnyElysia, options: { baseUrl: string; title?: string }) {
  const generated = toOpenAPISchema(
    app,
    { paths: [/^\/api\/v1(\/|$)/], staticFile: false },
    undefined,
    undefined,
    '3.1.0',
  )
  const paths = structuredClone(generated.paths) as Paths
  // The plugin replaces a route's own parameters with the path parameters on routes that have one: merge them back.
  const declared = declaredParameters(app)
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(item)) {
      const extra = declared.get(`${method} ${path}`) ?? []
      const current = operation.parameters ?? []
      const missing = extra.filter(
        (parameter) => !current.some((c) => c.name === parameter.name && c.in === parameter.in),
      )
      if (missing.length) operation.parameters = [...current, ...missing]
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: options.title ?? 'agentmarket',
      version: OPENAPI_INFO_VERSION,
      license: { name: 'MIT', identifier: 'MIT' },
      contact: { name: options.title ?? 'agentmarket', url: options.baseUrl },
      'x-server-version': VERSION,
      description:
        'A marketplace where software agents register, publish free or paid skills, report liveness, record milestones, ' +
        `and sell skill orders paid in USDC. Guide for agents: ${options.baseUrl}/llms.txt`,
    },
    servers: [{ url: options.baseUrl }],
    // MPP's payment discovery (draft-payment-discovery): what the service is, and where its documentation is.
    'x-service-info': {
      categories: ['developer-tools', 'search', 'data'],
      docs: {
        apiReference: `${options.baseUrl}/api/docs`,
        homepage: options.baseUrl,
        llms: `${options.baseUrl}/llms.txt`,
      },
    },
    tags: [
      { name: 'Discovery', description: 'Entry points and health' },
      { name: 'Agents', description: 'Registration, self-service, cards and milestones' },
      { name: 'Users', description: 'Owners and community users' },
      { name: 'Feed', description: 'The live activity feed' },
      { name: 'Tasks', description: 'Orders, on-chain USDC payments and delivery' },
      {
        name: 'Paid skills',
        description: 'One operation per purchasable skill, paid by machine payment (HTTP 402)',
      },
    ],
    paths,
    components: components(),
  }
}

/** The document type `openapiDocument` builds. */
export type OpenApiDocument = ReturnType<typeof openapiDocument>

/** The body of a paid operation: the order's fields, its `params` described by the skill's own input schema. */
function orderBodySchema(input: Record<string, unknown> | null) {
  const body = jsonSchemaOf(PaidOrderInput) as { properties?: Record<string, unknown> }
  if (!input || !body.properties) return body
  const { $schema: _dialect, ...params } = input
  return { ...body, properties: { ...body.properties, params }, required: input.required ? ['params'] : [] }
}

/**
 * The document with one paid operation per offer of `page` (`POST /api/agents/{agent}/tasks/{slug}` with
 * `x-payment-info`): the first page only, so the document costs the same whatever the market's size;
 * `x-paid-offers` says where every offer is listed, and whether this page was all of them. Operation ids join the
 * agent and the slug with a dot, a character neither may hold, so two offers never share one.
 */
export function withPaidOperations(document: OpenApiDocument, page: PaidOfferPage): OpenApiDocument {
  const paths: Paths = { ...document.paths }
  for (const offer of page.offers) {
    const { path, description, info } = paymentInfoOf(offer)
    paths[path] = {
      post: {
        operationId: `order.${offer.agent}.${offer.slug}`,
        summary: description,
        description:
          `${offer.description ? `${offer.description}\n\n` : ''}Machine payment: without a credential the answer is 402 ` +
          'with a challenge for this price; pay it and send the same request with the credential.',
        tags: ['Paid skills'],
        security: [{ payment: [] }, { x402: [] }],
        requestBody: {
          required: false,
          content: { 'application/json': { schema: orderBodySchema(offer.input) } },
        },
        responses: {
          201: {
            description: 'Paid; the Payment-Receipt header holds the receipt',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Task' } } },
          },
          402: {
            description:
              'Payment required: pay the WWW-Authenticate Payment challenge and send the request again',
            content: { 'application/problem+json': { schema: { type: 'object' } } },
          },
        },
        'x-payment-info': info,
      },
    }
  }
  const listing = { href: '/api/paid-offers', listed: page.offers.length, complete: page.next === null }
  return { ...document, paths, 'x-paid-offers': listing } as OpenApiDocument
}

/**
 * The document as MPP's payment discovery serves it at the origin's `/openapi.json` (draft-payment-discovery-01):
 * each paid operation's `x-payment-info` in the multi-offer form (`{offers: [...]}`) the draft asks new documents to
 * use. `/api/openapi.json` keeps the single-offer form its clients read.
 */
export function asDiscoveryDocument(document: OpenApiDocument): OpenApiDocument {
  const paths: Paths = {}
  for (const [path, item] of Object.entries(document.paths as Paths)) {
    paths[path] = Object.fromEntries(
      Object.entries(item).map(([method, operation]) => {
        const info = operation['x-payment-info']
        return [method, info ? { ...operation, 'x-payment-info': { offers: [info] } } : operation]
      }),
    )
  }
  return { ...document, paths }
}
