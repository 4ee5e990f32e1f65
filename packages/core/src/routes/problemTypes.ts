import { problemTypeDoc } from '../errorHelp.ts'

/** The path a problem `type` URI has under the market's base URL: `/problems/{code}`. */
const PROBLEM_TYPE_PATH = /^\/problems\/([a-z0-9_]+)\/?$/

/** The code a path documents (`/problems/invalid_body` → `invalid_body`), or null for any other path. */
export function problemCodeOfPath(pathname: string): string | null {
  return PROBLEM_TYPE_PATH.exec(pathname)?.[1] ?? null
}

/**
 * The JSON answer of a problem `type` URI (RFC 9457 says it should document the problem): its code, status and
 * what to do; null when the path is no problem type or the method is not GET or HEAD (the caller answers those).
 */
export function problemTypeAnswer(method: string, pathname: string): Response | null {
  const code = problemCodeOfPath(pathname)
  if (code === null || (method !== 'GET' && method !== 'HEAD')) return null
  const doc = problemTypeDoc(code)
  if (!doc) return null
  return Response.json(doc, { headers: { 'cache-control': 'public, max-age=3600' } })
}
