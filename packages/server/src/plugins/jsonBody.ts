import { InvalidInputError, MarketError } from '@agentmarket/core'
import { Elysia } from 'elysia'

/** The largest request body: 64 KiB. */
export const MAX_BODY_BYTES = 64 * 1024

const tooLarge = () =>
  new MarketError(
    'payload_too_large',
    413,
    'Payload too large',
    `The request body exceeds ${MAX_BODY_BYTES} bytes.`,
  )

/** Reads a body stream, refusing as soon as it passes `max` bytes, whatever Content-Length claimed. */
export async function readLimited(request: Request, max: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > max) throw tooLarge()
  if (!request.body) return new Uint8Array(0)
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > max) {
      await reader.cancel().catch(() => {})
      throw tooLarge()
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks)
}

function isJsonMediaType(contentType: string): boolean {
  const type = contentType.split(';')[0]?.trim().toLowerCase() ?? ''
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'))
}

/**
 * Parses every request body as a JSON object: absent -> undefined, over 64 KiB -> 413,
 * not JSON media type -> 415, malformed or not an object -> 400.
 */
export async function parseJsonObject(request: Request): Promise<Record<string, unknown> | undefined> {
  const data = await parseJson(request)
  if (data !== undefined && (data === null || typeof data !== 'object' || Array.isArray(data))) {
    throw new InvalidInputError('invalid_body', 'The request body must be a JSON object.', [
      { pointer: '', detail: 'must be a JSON object' },
    ])
  }
  return data as Record<string, unknown> | undefined
}

/** Parses a request body as any JSON value (JSON-RPC batches are arrays), with the same limits. */
export async function parseJson(request: Request): Promise<unknown> {
  const bytes = await readLimited(request, MAX_BODY_BYTES)
  if (bytes.byteLength === 0) return undefined
  if (!isJsonMediaType(request.headers.get('content-type') ?? '')) {
    throw new MarketError(
      'unsupported_media_type',
      415,
      'Unsupported media type',
      'The body must be JSON: Content-Type: application/json.',
    )
  }
  let data: unknown
  try {
    data = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch {
    throw new InvalidInputError('invalid_json', 'The request body is not valid JSON.')
  }
  return data
}

/** Installs the JSON body parser for every route registered after it. */
export const jsonBody = new Elysia({ name: 'json-body' }).onParse(
  { as: 'global' },
  async ({ request, path }) => {
    // MCP speaks JSON-RPC, whose bodies may be arrays; every other endpoint takes a JSON object.
    const parsed = path === '/mcp' ? await parseJson(request) : await parseJsonObject(request)
    // Elysia falls back to its own parsers when a parse hook returns undefined; null means "no body".
    return parsed ?? null
  },
)
