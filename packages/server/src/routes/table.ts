import { bearerKey, type RouteRow, SSE_KEEPALIVE_MS } from '@agentmarket/core'
import { Elysia } from 'elysia'
import type { Server } from 'elysia/universal'
import { operation } from '../openapi/operation.ts'
import { rawBodyOf } from '../plugins/jsonBody.ts'
import { queryOf, type RouteDeps } from './deps.ts'
import { jsonOnce, jsonWithETag, type Reply } from './etag.ts'

/**
 * A stream's own idle timeout, in place of the server's (IDLE_TIMEOUT_SECONDS), which may be shorter than the
 * keep-alive: each write renews it, so the stream ends only when its client leaves or stops taking its writes.
 */
const STREAM_IDLE_TIMEOUT_SECONDS = 3 * (SSE_KEEPALIVE_MS / 1000)

/** Elysia's path of a row: `{name}` segments as `:name`. */
export const elysiaPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1')

/** What the Elysia handler of a row reads from its context. */
type HandlerContext = {
  request: Request
  params: Record<string, string>
  body: unknown
  set: Reply
  server: Server | null
}

/** The handler of one row: the core call with the request's parts, its reply sent through Elysia's `set`. */
function handlerOf(row: RouteRow, { market, clientOf, streams }: RouteDeps) {
  // Only rows that read a query pay for parsing the URL.
  const queryOfRow = row.query ? queryOf : () => ({})
  const answer = async (
    request: Request,
    params: Record<string, string>,
    body: unknown,
    set: Reply,
    server: Server | null,
  ) => {
    const reply = await row.call(market, {
      params,
      query: queryOfRow(request),
      body: (body ?? undefined) as Record<string, unknown> | undefined,
      headers: request.headers,
      apiKey: bearerKey(request),
      request,
      rawBody: body === undefined ? undefined : rawBodyOf(request),
      client: () => clientOf(request, server),
      admitStream: () => {
        const release = streams.open(clientOf(request, server))
        server?.timeout(request, STREAM_IDLE_TIMEOUT_SECONDS)
        return release
      },
    })
    if (reply instanceof Response) return reply
    if (reply.status !== undefined) set.status = reply.status
    else if (row.ok.status !== 200) set.status = row.ok.status
    if (reply.headers) Object.assign(set.headers, reply.headers)
    if (row.etag) return jsonWithETag(reply.body, request, set, row.etag)
    if (row.cachedRead && typeof reply.body === 'object' && reply.body !== null)
      return jsonOnce(reply.body, set)
    return reply.body
  }
  // Elysia reads which context fields a handler names to decide what to prepare: a GET names no body.
  return row.method === 'GET'
    ? ({ request, params, set, server }: HandlerContext) => answer(request, params, undefined, set, server)
    : ({ request, params, body, set, server }: HandlerContext) => answer(request, params, body, set, server)
}

/** Every row as an Elysia route with its OpenAPI operation (the rate limiter reads its class from there). */
export function tableRoutes(rows: readonly RouteRow[], deps: RouteDeps) {
  const app = new Elysia()
  for (const row of rows) {
    const { call: _call, ...facts } = row
    app.route(row.method, elysiaPath(row.path), handlerOf(row, deps) as never, operation(facts) as never)
  }
  return app
}
