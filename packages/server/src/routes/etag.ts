import { createHash } from 'node:crypto'

/** True when an If-None-Match header matches `etag` (weak comparison, lists and `*` allowed). */
export function matchesETag(ifNoneMatch: string | null, etag: string): boolean {
  if (!ifNoneMatch) return false
  const bare = (tag: string) => tag.trim().replace(/^W\//, '')
  return ifNoneMatch.split(',').some((tag) => tag.trim() === '*' || bare(tag) === bare(etag))
}

/** A JSON response with a content ETag and caching header; 304 with no body when the client has it. */
export function jsonWithETag(value: unknown, request: Request, cacheControl: string): Response {
  const body = JSON.stringify(value)
  const etag = `W/"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
  const headers = { etag, 'cache-control': cacheControl }
  if (matchesETag(request.headers.get('if-none-match'), etag))
    return new Response(null, { status: 304, headers })
  return new Response(body, { headers: { ...headers, 'content-type': 'application/json' } })
}
