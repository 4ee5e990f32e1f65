import {
  bearerKey,
  type RateClass,
  type RouteCall,
  type RouteReply,
  type RouteRow,
  SSE_KEEPALIVE_MS,
} from '@agentmarket/core/routes'
import { Elysia } from 'elysia'
import type { Server } from 'elysia/universal'
import { operation } from '../openapi/operation.ts'
import { rawBodyOf, readJsonBody } from '../plugins/jsonBody.ts'
import { queryOf, type RouteDeps } from './deps.ts'
import { type Reply, sendAsBuilt, sendJson, sendReady } from './etag.ts'

/**
 * A stream's own idle timeout, in place of the server's (IDLE_TIMEOUT_SECONDS), which may be shorter than the
 * keep-alive: each write renews it, so the stream ends only when its client leaves or stops taking its writes.
 */
const STREAM_IDLE_TIMEOUT_SECONDS = 3 * (SSE_KEEPALIVE_MS / 1000)

/** Elysia's path of a row: `{name}` segments as `:name`. */
export const elysiaPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1')

/**
 * What the Elysia handler of a row reads from its context. Not `server`: Elysia defines it on each request's context
 * when a handler names it (bench: the HTTP section); the call asks the host for it when it needs the client's address.
 */
type HandlerContext = {
  request: Request
  params: Record<string, string>
  set: Reply
}

/**
 * A row's call over one Elysia request. The parts a row may not read (the bearer key, the query, the client's address)
 * are getters, computed only when read: the hot cached reads pay for none of them.
 */
class ElysiaCall implements RouteCall {
  constructor(
    readonly request: Request,
    readonly params: Record<string, string>,
    readonly body: Record<string, unknown> | undefined,
    private readonly deps: RouteDeps,
    private readonly reply: Reply,
  ) {}
  private get server(): Server | null {
    return this.deps.server()
  }
  get headers() {
    return this.request.headers
  }
  get apiKey() {
    return bearerKey(this.request)
  }
  get query() {
    return queryOf(this.request)
  }
  get rawBody() {
    return this.body === undefined ? undefined : rawBodyOf(this.request)
  }
  client() {
    return this.deps.clientOf(this.request, this.server)
  }
  admitStream() {
    const release = this.deps.streams.open(this.client())
    this.server?.timeout(this.request, STREAM_IDLE_TIMEOUT_SECONDS)
    return release
  }
  /** Absent (undefined) when the host has no rate limits, as RouteCall says. */
  get charge() {
    const charge = this.deps.charge
    return (
      charge && ((rateClass: RateClass) => charge(rateClass, this.request, this.server, this.reply.headers))
    )
  }
}

/** The handler of one row: the core call with the request's parts, its reply sent through Elysia's `set`. */
function handlerOf(row: RouteRow, deps: RouteDeps) {
  const { etag, cachedRead } = row
  const okStatus = row.ok.status === 200 ? undefined : row.ok.status
  const send = (reply: RouteReply, request: Request, set: Reply) => {
    if (reply instanceof Response) return sendAsBuilt(reply, set)
    const status = reply.status ?? okStatus
    if (status !== undefined) set.status = status
    // A cached read's bytes and headers are made once per value the core hands out (etag.ts).
    if (etag || (cachedRead && typeof reply.body === 'object' && reply.body !== null))
      return sendReady(reply.body, reply.headers, etag, request, set)
    if (reply.headers) Object.assign(set.headers, reply.headers)
    const { body } = reply
    // A plain object or array is what Elysia answers as JSON (Response.json); anything else it answers its own way.
    const json =
      typeof body === 'object' && body !== null && (Array.isArray(body) || body.constructor === Object)
    return json ? sendJson(body, set) : body
  }
  // Elysia reads which context fields a handler names to decide what to prepare: no handler names the body, which a
  // write reads itself (readJsonBody), so Elysia prepares none (jsonBody.ts says why).
  return row.method === 'GET'
    ? ({ request, params, set }: HandlerContext) =>
        row
          .call(deps.market, new ElysiaCall(request, params, undefined, deps, set))
          .then((reply) => send(reply, request, set))
    : async ({ request, params, set }: HandlerContext) => {
        const sent = (await readJsonBody(request)) as RouteCall['body']
        const reply = await row.call(deps.market, new ElysiaCall(request, params, sent, deps, set))
        return send(reply, request, set)
      }
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
