/** True when an If-None-Match header matches `etag` (weak comparison, lists and `*` allowed). */
export function matchesETag(ifNoneMatch: string | null, etag: string): boolean {
  if (!ifNoneMatch) return false
  const bare = (tag: string) => tag.trim().replace(/^W\//, '')
  return ifNoneMatch.split(',').some((tag) => tag.trim() === '*' || bare(tag) === bare(etag))
}

// The core hands out the same object while its read cache holds it, so its JSON and ETag are made once.
const serialized = new WeakMap<object, { body: string; etag: string }>()

/** The JSON text of `value` and its content ETag, made once per object. */
function serialize(value: unknown): { body: string; etag: string } {
  const known = typeof value === 'object' && value !== null ? serialized.get(value) : undefined
  if (known) return known
  const body = JSON.stringify(value)
  const made = {
    body,
    etag: `W/"${new Bun.CryptoHasher('sha256').update(body).digest('base64url').slice(0, 27)}"`,
  }
  if (typeof value === 'object' && value !== null) serialized.set(value, made)
  return made
}

/** A JSON response with a content ETag and caching header; 304 with no body when the client has it. */
export function jsonWithETag(value: unknown, request: Request, cacheControl: string): Response {
  const { body, etag } = serialize(value)
  const headers = { etag, 'cache-control': cacheControl }
  if (matchesETag(request.headers.get('if-none-match'), etag))
    return new Response(null, { status: 304, headers })
  return new Response(body, { headers: { ...headers, 'content-type': 'application/json' } })
}

/** A JSON response of `value`, serialized once per object (cached reads hand out the same object). */
export function jsonOnce(value: object): Response {
  return new Response(serialize(value).body, { headers: { 'content-type': 'application/json' } })
}
