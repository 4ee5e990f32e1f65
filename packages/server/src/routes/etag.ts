import { etagOfDigest, matchesETag } from '@agentmarket/core/routes'

/**
 * A cached read's answer made ready once: its JSON text, its content ETag, and the headers of its 200 and of its 304
 * (the row's own, the ETag and Cache-Control; the 200 also its content type). The text, not its UTF-8 bytes: Bun makes
 * a Response of a string for less than one of a Uint8Array, which it copies (about 0.3 µs a card).
 */
type ReadyAnswer = {
  body: string
  etag: string
  ok: Record<string, string | number>
  notModified: Record<string, string | number>
}

/** The answers made for one value, each with the row headers and Cache-Control it was made for. */
type Made = {
  headers: Record<string, string> | undefined
  cacheControl: string | undefined
  answer: ReadyAnswer
}

/** How many header variants (an A2A media type, a plain one) one value keeps: a few, whatever a row answers. */
const VARIANTS = 4

// The core hands out the same object while its read cache holds it (a new one once the store's change version or the
// value's liveness moves): what is made from it is kept with it, and goes when it goes.
const made = new WeakMap<object, Made[]>()

/** The one ready answer of a value that is not an object (nothing can be kept with it). */
const never: Made[] = []

/** True when `a` and `b` hold the same headers (both small: a row's Vary and content type). */
function sameHeaders(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  if (a === b) return true
  if (!a || !b) return false
  let count = 0
  for (const name in a) {
    if (a[name] !== b[name]) return false
    count++
  }
  for (const _ in b) count--
  return count === 0
}

/** `value`'s JSON and ETag, with the headers a row answers it with, made now. */
function makeReady(
  value: unknown,
  headers: Record<string, string> | undefined,
  cacheControl: string | undefined,
): ReadyAnswer {
  const body = JSON.stringify(value)
  // Core's ETag format, over Bun's native hasher (synchronous, where core's etagOf awaits Web Crypto).
  const etag = etagOfDigest(new Bun.CryptoHasher('sha256').update(body).digest())
  const cached: Record<string, string> =
    cacheControl === undefined ? {} : { etag, 'cache-control': cacheControl }
  const notModified: Record<string, string> = { ...headers, ...cached }
  // A row may answer another JSON media type (an A2A card asked for as application/a2a+json).
  return { body, etag, notModified, ok: { 'content-type': 'application/json', ...notModified } }
}

/**
 * The ready answer of `value` with the row's `headers` (and with `cacheControl`, its ETag), made once per value and
 * variant: a cached read answers its bytes and headers as they are until the core hands out another value.
 */
export function readyAnswer(
  value: unknown,
  headers: Record<string, string> | undefined,
  cacheControl: string | undefined,
): ReadyAnswer {
  const keepable = typeof value === 'object' && value !== null
  const list = keepable ? (made.get(value) ?? []) : never
  for (const entry of list)
    if (entry.cacheControl === cacheControl && sameHeaders(entry.headers, headers)) return entry.answer
  const answer = makeReady(value, headers, cacheControl)
  if (!keepable) return answer
  // Headers that differ at each request (none do today) would each make a variant: only the last few are kept.
  if (list.length >= VARIANTS) list.shift()
  list.push({ headers, cacheControl, answer })
  if (list.length === 1) made.set(value, list)
  return answer
}

/** The part of Elysia's context a reply sets: status and headers, sent with the body in one Response. */
export type Reply = { status?: number | string; headers: Record<string, string | number> }

/** The headers of every answer (app.ts makes them Elysia's defaults, in each request's `set` from its start). */
export const APP_HEADERS: Readonly<Record<string, string>> = {
  'access-control-allow-origin': '*',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
}
const APP_HEADER_COUNT = Object.keys(APP_HEADERS).length
// Made once: Bun copies a Headers object into a Response for about 1 µs less than it reads the plain object of the
// same headers Elysia passes it (bench/CHANGES.md).
const appHeaders = new Headers(APP_HEADERS)
const okWithAppHeaders = { headers: appHeaders }

/** True when `headers` are the app's own alone, as Elysia starts each request's `set` (nothing added since). */
function appHeadersAlone(headers: Reply['headers']): boolean {
  let count = 0
  for (const name in headers) {
    if (headers[name] !== APP_HEADERS[name]) return false
    count++
  }
  return count === APP_HEADER_COUNT
}

/**
 * A route's JSON object or array: while `set` holds the app's headers alone and a numeric status, the Response Elysia
 * would make of it (`Response.json` with those headers, the same bytes) made here from headers made once, and `set`
 * left as Elysia starts it so Elysia sends it as it is; else `body` itself, for Elysia to answer with what `set` holds.
 */
export function sendJson(body: object, set: Reply): object | Response {
  const status = set.status ?? 200
  if (typeof status !== 'number' || !appHeadersAlone(set.headers)) return body
  set.headers = {}
  set.status = 200
  return Response.json(body, status === 200 ? okWithAppHeaders : { status, headers: appHeaders })
}

/**
 * `response` with the headers `set` holds (the app's defaults, the rate limits') moved into it and `set` left as
 * Elysia starts it, so Elysia sends `response` as it is: a Response returned beside a status or headers in `set` is
 * copied whole (new headers, its body as a stream, another Response), which cost a 402 or a 404 about a quarter of its
 * CPU (bench/CHANGES.md). A header the response has already stays its own, as in Elysia's copy.
 */
export function sendAsBuilt(response: Response, set: Reply): Response {
  const { headers } = response
  for (const name in set.headers) if (!headers.has(name)) headers.set(name, String(set.headers[name]))
  set.headers = {}
  set.status = 200
  return response
}

/**
 * A cached read's ready answer written through `set` (so the app's default headers go into the one Response Elysia
 * makes): its bytes, or with `cacheControl` a 304 with no body when If-None-Match names its ETag.
 */
export function sendReady(
  value: unknown,
  headers: Record<string, string> | undefined,
  cacheControl: string | undefined,
  request: Request,
  set: Reply,
): string {
  const answer = readyAnswer(value, headers, cacheControl)
  if (cacheControl !== undefined && matchesETag(request.headers.get('if-none-match'), answer.etag)) {
    set.status = 304
    Object.assign(set.headers, answer.notModified)
    return ''
  }
  Object.assign(set.headers, answer.ok)
  return answer.body
}

/**
 * JSON with a content ETag and caching header, written through `set` (so the app's default headers go into the
 * one Response Elysia makes); 304 with no body when the client has it.
 */
export function jsonWithETag(value: unknown, request: Request, set: Reply, cacheControl: string) {
  return sendReady(value, undefined, cacheControl, request, set)
}
