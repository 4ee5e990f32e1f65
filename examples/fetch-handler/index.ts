import {
  ChainUnavailableError,
  defaultConfig,
  InvalidInputError,
  MarketError,
  Marketplace,
  type MarketplaceActions,
  memoryStore,
  NotFoundError,
  type TaskAnswer,
  toProblem,
  UnauthorizedError,
} from '@agentmarket/core'

/** The largest request body, as CONTRACT.md fixes it: 64 KiB. */
const MAX_BODY_BYTES = 64 * 1024

type Call = {
  market: MarketplaceActions
  request: Request
  url: URL
  params: string[]
  body: Record<string, unknown> | undefined
}
type Route = { method: string; path: RegExp; handle: (call: Call) => Promise<Response> }

const tooLarge = () =>
  new MarketError(
    'payload_too_large',
    413,
    'Payload too large',
    `The request body exceeds ${MAX_BODY_BYTES} bytes.`,
  )

/** Reads the body as UTF-8 text, refusing it as soon as it passes the limit, whatever Content-Length claimed. */
async function readText(request: Request): Promise<string> {
  if (Number(request.headers.get('content-length') ?? 0) > MAX_BODY_BYTES) throw tooLarge()
  if (!request.body) return ''
  const reader = request.body.getReader()
  const decode = utf8Decoder()
  let text = ''
  let size = 0
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    size += chunk.value.byteLength
    if (size > MAX_BODY_BYTES) {
      await reader.cancel().catch(() => {})
      throw tooLarge()
    }
    text += decode(chunk.value)
  }
  return text + decode()
}

/** A streaming UTF-8 decoder (no bytes: the end) that answers malformed text with the invalid_json problem. */
function utf8Decoder() {
  const decoder = new TextDecoder('utf-8', { fatal: true })
  return (bytes?: Uint8Array) => {
    try {
      return decoder.decode(bytes, { stream: bytes !== undefined })
    } catch {
      throw new InvalidInputError('invalid_json', 'The request body is not valid UTF-8 JSON.')
    }
  }
}

const isJsonType = (type: string) =>
  type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'))

/** The body as a JSON object: absent -> undefined, not JSON media type -> 415, malformed or not an object -> 400. */
async function readJsonObject(request: Request): Promise<Record<string, unknown> | undefined> {
  const text = await readText(request)
  if (text === '') return undefined
  const type = request.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase() ?? ''
  if (!isJsonType(type))
    throw new MarketError('unsupported_media_type', 415, 'Unsupported media type', 'The body must be JSON.')
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch {
    throw new InvalidInputError('invalid_json', 'The request body is not valid JSON.')
  }
  if (typeof data === 'object' && data !== null && !Array.isArray(data))
    return data as Record<string, unknown>
  throw new InvalidInputError('invalid_body', 'The request body must be a JSON object.', [
    { pointer: '', detail: 'must be a JSON object' },
  ])
}

/** The bearer token of the Authorization header, or undefined when absent or of another scheme. */
const bearer = (request: Request) =>
  /^Bearer[ \t]+(\S+)\s*$/i.exec(request.headers.get('authorization') ?? '')?.[1]

const queryOf = (url: URL) => Object.fromEntries(url.searchParams)

/** A core task answer as a response: its status, `Retry-After` when it has one, and whether it is a replay. */
function sendAnswer(answer: TaskAnswer): Response {
  const headers = new Headers()
  if (answer.retryAfterSeconds !== undefined) headers.set('retry-after', String(answer.retryAfterSeconds))
  if (answer.replayed) headers.set('idempotent-replayed', 'true')
  return Response.json(answer.body, { status: answer.status, headers })
}

/** The card with a content ETag; 304 when the client already has it. */
async function withETag(value: unknown, request: Request): Promise<Response> {
  const body = JSON.stringify(value)
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(body)))
  const hash = btoa(String.fromCharCode(...digest))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
  const headers = { etag: `W/"${hash.slice(0, 27)}"`, 'cache-control': 'public, max-age=60' }
  const known = (request.headers.get('if-none-match') ?? '').split(',').map((tag) => tag.trim())
  if (known.includes('*') || known.some((tag) => tag.replace(/^W\//, '') === headers.etag.slice(2)))
    return new Response(null, { status: 304, headers })
  return new Response(body, { headers: { ...headers, 'content-type': 'application/json' } })
}

const ok = async (value: Promise<unknown>) => Response.json(await value)

// Paths are matched after the `/api` or `/api/v1` prefix; each group is one path segment.
const routes: Route[] = [
  { method: 'POST', path: /^\/agents\/register$/, handle: (c) => ok(c.market.registerAgent(c.body ?? {})) },
  {
    method: 'POST',
    path: /^\/agents\/([^/]+)\/heartbeat$/,
    handle: (c) => ok(c.market.heartbeat(c.params[0] ?? '', bearer(c.request))),
  },
  { method: 'GET', path: /^\/community\/agents$/, handle: (c) => ok(c.market.listAgents(queryOf(c.url))) },
  {
    method: 'GET',
    path: /^\/community\/agents\/([^/]+)$/,
    handle: (c) => ok(c.market.getAgent(c.params[0] ?? '')),
  },
  {
    method: 'GET',
    path: /^\/agents\/([^/]+)\/agent-card\.json$/,
    handle: async (c) => withETag(await c.market.agentCard(c.params[0] ?? ''), c.request),
  },
  {
    method: 'POST',
    path: /^\/agents\/([^/]+)\/tasks$/,
    handle: async (c) =>
      sendAnswer(
        await c.market.createTask(c.params[0] ?? '', c.body ?? {}, {
          idempotencyKey: c.request.headers.get('idempotency-key'),
        }),
      ),
  },
  {
    method: 'GET',
    path: /^\/agents\/([^/]+)\/tasks\/([^/]+)$/,
    handle: (c) => ok(c.market.getTask(c.params[0] ?? '', c.params[1] ?? '')),
  },
  { method: 'GET', path: /^\/feed\/live$/, handle: (c) => ok(c.market.liveFeed(queryOf(c.url))) },
]

const notFound = () => new NotFoundError('not_found', 'No such resource or method.')

/** The route and its decoded path segments, or a 404. */
function match(method: string, pathname: string): { route: Route; params: string[] } {
  const rest = /^\/api(?:\/v1)?(\/.*)$/.exec(pathname)?.[1] ?? ''
  for (const route of routes) {
    const found = route.method === method ? route.path.exec(rest) : null
    if (!found) continue
    try {
      return { route, params: found.slice(1).map(decodeURIComponent) }
    } catch {
      throw notFound()
    }
  }
  throw notFound()
}

/** Any thrown value as an RFC 9457 problem response, with the headers its status calls for. */
function problemResponse(error: unknown, url: URL, typeBase: string): Response {
  const problem = toProblem(error, url.pathname, typeBase)
  const headers = new Headers({ 'content-type': 'application/problem+json' })
  if (error instanceof UnauthorizedError) headers.set('www-authenticate', error.challenge)
  if (error instanceof ChainUnavailableError) headers.set('retry-after', String(error.retryAfterSeconds))
  if (!(error instanceof MarketError)) console.error('unhandled error', url.pathname, error)
  return new Response(JSON.stringify(problem), { status: problem.status, headers })
}

/** A fetch handler over `market`, published at `baseUrl` (the base of problem `type` URIs). */
export function createFetchHandler(market: MarketplaceActions, baseUrl: string) {
  return {
    async fetch(request: Request): Promise<Response> {
      const url = new URL(request.url)
      try {
        const { route, params } = match(request.method, url.pathname)
        const body = request.method === 'POST' ? await readJsonObject(request) : undefined
        return await route.handle({ market, request, url, params, body })
      } catch (error) {
        return problemResponse(error, url, baseUrl)
      }
    },
  }
}

let handler: ReturnType<typeof createFetchHandler> | undefined

/** The marketplace on an in-memory store, as a `{ fetch }` module for Workers, Deno Deploy and Bun.serve. */
export default {
  fetch(request: Request): Promise<Response> {
    // Workers hand no configuration to module scope, and the memory store lives only as long as this isolate, so
    // the origin it is first reached at is taken as its public address.
    if (!handler) {
      const baseUrl = new URL(request.url).origin
      handler = createFetchHandler(
        Marketplace.create({ store: memoryStore(), config: defaultConfig(baseUrl) }),
        baseUrl,
      )
    }
    return handler.fetch(request)
  },
}
