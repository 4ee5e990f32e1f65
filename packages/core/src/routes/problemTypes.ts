import { problemTypeDoc } from '../errorHelp.ts'

/** The path a problem `type` URI has under the market's base URL: `/problems/{code}`. */
const PROBLEM_TYPE_PATH = /^\/problems\/([a-z0-9_]+)\/?$/

/** How long clients may keep a problem type's documentation: it changes only with a release. */
export const PROBLEM_TYPE_CACHE = 'public, max-age=3600'

/** The JSON documentation of one problem `code` (RFC 9457 says its `type` URI should document it), or null. */
export function problemTypeResponse(code: string): Response | null {
  const doc = problemTypeDoc(code)
  return doc && Response.json(doc, { headers: { 'cache-control': PROBLEM_TYPE_CACHE } })
}

/**
 * The JSON answer of a problem `type` URI: its code, status and what to do; null when the path is no problem type or
 * the method is not GET or HEAD (the caller answers those).
 */
export function problemTypeAnswer(method: string, pathname: string): Response | null {
  const code = PROBLEM_TYPE_PATH.exec(pathname)?.[1]
  if (code === undefined || (method !== 'GET' && method !== 'HEAD')) return null
  return problemTypeResponse(code)
}
