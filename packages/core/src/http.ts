import {
  ChainUnavailableError,
  IdempotencyKeyInUseError,
  InvalidInputError,
  isUnexpected,
  MarketError,
  MethodNotAllowedError,
  NotFoundError,
  PaymentOutcomeUnknownError,
  StorageFullError,
  StoreUnavailableError,
  TooManyStreamsError,
  toProblem,
  UnauthorizedError,
} from './errors.ts'
import { RateLimitedError } from './RateLimit.ts'

/** The largest request body a host accepts: 64 KiB (CONTRACT.md). */
export const MAX_BODY_BYTES = 64 * 1024

/** The media type of every error body. */
export const PROBLEM_MEDIA_TYPE = 'application/problem+json'

const tooLarge = (max: number) =>
  new MarketError('payload_too_large', 413, 'Payload too large', `The request body exceeds ${max} bytes.`)

/**
 * Reads a body stream, refusing (413) as soon as it passes `max` bytes, whatever Content-Length claimed. A host whose
 * HTTP server frames each request by its Content-Length (Bun's, node:http) passes `framed`: a body declaring a
 * length within `max` is then read whole, natively (reading it as a stream costs several times more), and its size
 * is checked after; a body without one (chunked) is still counted chunk by chunk.
 */
export async function readLimited(
  request: Request,
  max = MAX_BODY_BYTES,
  { framed = false }: { framed?: boolean } = {},
): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > max) {
    // Not read, so not held: the host may drop the rest instead of buffering it.
    await request.body?.cancel().catch(() => {})
    throw tooLarge(max)
  }
  // Framed: read whole without asking for the body's stream, whose object alone costs a POST a tenth of its
  // throughput (bench/CHANGES.md); a request without a body reads as no bytes.
  if (framed && declared !== null && /^\d+$/.test(declared)) {
    const bytes = new Uint8Array(await request.arrayBuffer())
    if (bytes.byteLength > max) throw tooLarge(max)
    return bytes
  }
  if (!request.body) return new Uint8Array(0)
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    total += read.value.byteLength
    if (total > max) {
      await reader.cancel().catch(() => {})
      throw tooLarge(max)
    }
    chunks.push(read.value)
  }
  const bytes = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}

function isJsonMediaType(contentType: string): boolean {
  const type = contentType.split(';')[0]?.trim().toLowerCase() ?? ''
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'))
}

/** A request body as any JSON value: absent -> undefined, over 64 KiB -> 413, not JSON media type -> 415, malformed -> 400. */
export async function readJson(request: Request, max = MAX_BODY_BYTES): Promise<unknown> {
  return jsonOfBytes(await readLimited(request, max), request)
}

// One decoder for every body: decode() without `stream` keeps no state between calls.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * Body bytes already read (readLimited) as JSON, with readJson's answers: undefined for none, 415 for another media
 * type, 400 for malformed JSON. For hosts that keep the bytes too (a wallet proof signs their digest).
 */
export function jsonOfBytes(bytes: Uint8Array, request: Request): unknown {
  if (bytes.byteLength === 0) return undefined
  if (!isJsonMediaType(request.headers.get('content-type') ?? '')) {
    throw new MarketError(
      'unsupported_media_type',
      415,
      'Unsupported media type',
      'The body must be JSON: Content-Type: application/json.',
    )
  }
  try {
    return JSON.parse(strictUtf8.decode(bytes))
  } catch {
    throw new InvalidInputError('invalid_json', 'The request body is not valid JSON.')
  }
}

/**
 * A request body as a JSON object, with readJson's limits; a body that is present but not an object is 400.
 * @example const body = await readJsonObject(request) // undefined when no body was sent
 */
export async function readJsonObject(
  request: Request,
  max = MAX_BODY_BYTES,
): Promise<Record<string, unknown> | undefined> {
  return jsonObjectOf(await readJson(request, max))
}

/** A parsed body that must be a JSON object, or absent: 400 for any other JSON value. */
export function jsonObjectOf(data: unknown): Record<string, unknown> | undefined {
  if (data !== undefined && (data === null || typeof data !== 'object' || Array.isArray(data))) {
    throw new InvalidInputError('invalid_body', 'The request body must be a JSON object.', [
      { pointer: '', detail: 'must be a JSON object' },
    ])
  }
  return data as Record<string, unknown> | undefined
}

/** The API key of an `Authorization: Bearer …` header (a header value or a whole request); undefined otherwise. */
export function bearerKey(from: Request | string | null | undefined): string | undefined {
  const header = typeof from === 'object' && from !== null ? from.headers.get('authorization') : from
  return /^Bearer[ \t]+(\S+)\s*$/i.exec(header ?? '')?.[1]
}

/** The 404 of a path or method the host does not serve. */
export function routeNotFound(): NotFoundError {
  return new NotFoundError('not_found', 'No such resource or method.')
}

/**
 * The path of a request URL without its query, read without parsing the whole URL: a Request's URL is already
 * parsed and normalized, so this is its `pathname` (problems and log lines read it on every answer they make).
 */
export function requestPath(url: string): string {
  // A URL that is only its path (a request without a usable Host, as Bun gives it) starts there.
  const start = url.startsWith('/') ? 0 : url.indexOf('/', url.indexOf('//') + 2)
  if (start < 0) return '/'
  const query = url.indexOf('?', start)
  return url.slice(start, query < 0 ? undefined : query)
}

/** How problemResponse reports an unexpected error unless told otherwise. */
function reportToConsole(error: unknown, request: Request): void {
  console.error('unhandled error', request.method, requestPath(request.url), error)
}

/**
 * Any thrown value as its RFC 9457 problem response, with `WWW-Authenticate` on 401, `Retry-After` on 503 and 507, and
 * `Retry-After` with the RateLimit headers on 429.
 * Unexpected errors become a 500 that never shows their message; `report` logs them (default: console.error).
 * @example catch (error) { return problemResponse(error, request, 'https://market.example') }
 */
export function problemResponse(
  error: unknown,
  request: Request,
  typeBase: string,
  report: (error: unknown, request: Request) => void = reportToConsole,
): Response {
  const problem = toProblem(error, requestPath(request.url), typeBase)
  // A plain record: a Headers object costs every refusal (a 402, a 404, a 429) more than the answer's other parts.
  const headers: Record<string, string> = { 'content-type': PROBLEM_MEDIA_TYPE }
  if (problem.status === 401)
    headers['www-authenticate'] =
      error instanceof UnauthorizedError ? error.challenge : 'Bearer realm="agentmarket"'
  if (
    error instanceof ChainUnavailableError ||
    error instanceof TooManyStreamsError ||
    error instanceof StoreUnavailableError ||
    error instanceof PaymentOutcomeUnknownError ||
    error instanceof StorageFullError ||
    error instanceof IdempotencyKeyInUseError
  )
    headers['retry-after'] = String(error.retryAfterSeconds)
  if (error instanceof MethodNotAllowedError) headers.allow = error.allow.join(', ')
  if (error instanceof RateLimitedError)
    for (const [name, value] of Object.entries(error.headers)) headers[name.toLowerCase()] = value
  // Unexpected failures are reported: thrown as such, or behind a problem (its `cause`).
  if (problem.status >= 500 && isUnexpected(error)) report(error, request)
  return new Response(JSON.stringify(problem), { status: problem.status, headers })
}
