import { withoutTrailing } from '../Trim.ts'

/** True when an If-None-Match header matches `etag` (weak comparison, lists and `*` allowed). */
export function matchesETag(ifNoneMatch: string | null, etag: string): boolean {
  if (!ifNoneMatch) return false
  const bare = (tag: string) => tag.trim().replace(/^W\//, '')
  return ifNoneMatch.split(',').some((tag) => tag.trim() === '*' || bare(tag) === bare(etag))
}

/** The weak content ETag of a JSON text: the first 27 characters of its SHA-256 in base64url. */
export function etagOfDigest(digest: Uint8Array): string {
  const base64 = btoa(String.fromCharCode(...digest))
  return `W/"${withoutTrailing(base64.replace(/\+/g, '-').replace(/\//g, '_'), '=').slice(0, 27)}"`
}

/** The weak content ETag of a JSON text, by Web Crypto (hosts with a synchronous SHA-256 use etagOfDigest). */
export async function etagOf(body: string): Promise<string> {
  return etagOfDigest(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(body))))
}
