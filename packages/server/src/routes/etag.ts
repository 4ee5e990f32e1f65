import { etagOfDigest, matchesETag } from '@agentmarket/core/routes'

// The core hands out the same object while its read cache holds it, so its JSON and ETag are made once.
const serialized = new WeakMap<object, { body: string; etag: string }>()

/** The JSON text of `value` and its content ETag, made once per object. */
function serialize(value: unknown): { body: string; etag: string } {
  const known = typeof value === 'object' && value !== null ? serialized.get(value) : undefined
  if (known) return known
  const body = JSON.stringify(value)
  const made = {
    body,
    // Core's ETag format, over Bun's native hasher (synchronous, where core's etagOf awaits Web Crypto).
    etag: etagOfDigest(new Bun.CryptoHasher('sha256').update(body).digest()),
  }
  if (typeof value === 'object' && value !== null) serialized.set(value, made)
  return made
}

/** The part of Elysia's context a reply sets: status and headers, sent with the body in one Response. */
export type Reply = { status?: number | string; headers: Record<string, string | number> }

/**
 * JSON with a content ETag and caching header, written through `set` (so the app's default headers go into the
 * one Response Elysia makes); 304 with no body when the client has it.
 */
export function jsonWithETag(value: unknown, request: Request, set: Reply, cacheControl: string): string {
  const { body, etag } = serialize(value)
  set.headers.etag = etag
  set.headers['cache-control'] = cacheControl
  if (matchesETag(request.headers.get('if-none-match'), etag)) {
    set.status = 304
    return ''
  }
  // A row may answer another JSON media type (an A2A card asked for as application/a2a+json).
  set.headers['content-type'] ??= 'application/json'
  return body
}

/** JSON of `value`, serialized once per object (cached reads hand out the same object), written through `set`. */
export function jsonOnce(value: object, set: Reply): string {
  set.headers['content-type'] = 'application/json'
  return serialize(value).body
}
