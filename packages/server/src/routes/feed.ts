import { type FeedEventView, FeedQueryInput, type MarketplaceActions } from '@agentmarket/core'
import { Elysia } from 'elysia'
import type { Server } from 'elysia/universal'
import { operation } from '../openapi/operation.ts'
import { queryOf, type RouteDeps } from './deps.ts'

/** How often an idle stream sends a comment, so proxies keep it open. */
export const SSE_KEEPALIVE_MS = 15_000
/**
 * A stream's own idle timeout, in place of the server's (IDLE_TIMEOUT_SECONDS), which may be shorter than the
 * keep-alive: each write renews it, so the stream ends only when its client leaves or stops taking its writes.
 */
const SSE_IDLE_TIMEOUT_SECONDS = 3 * (SSE_KEEPALIVE_MS / 1000)

const encoder = new TextEncoder()

/**
 * Bytes a stream may hold for a client that does not read them (after what the socket took): past this, the client is
 * too far behind to catch up, and the stream is closed rather than grown without bound.
 */
export const SSE_MAX_QUEUED_BYTES = 256 * 1024

/** One server-sent event per feed event; `id:` lets a client resume with Last-Event-ID. */
function sseFrame(event: FeedEventView): Uint8Array {
  return encoder.encode(`id: ${event.id}\ndata: ${JSON.stringify(event)}\n\n`)
}

/**
 * A text/event-stream of new feed events that ends cleanly when the client leaves, or when it stops reading and
 * SSE_MAX_QUEUED_BYTES wait for it; `release` is called once when it ends.
 */
export async function feedStream(
  market: MarketplaceActions,
  request: Request,
  server: Server | null,
  release: () => void = () => {},
): Promise<Response> {
  server?.timeout(request, SSE_IDLE_TIMEOUT_SECONDS)
  const resumeFrom =
    request.headers.get('last-event-id') ?? new URL(request.url).searchParams.get('after') ?? undefined
  let stop = () => {}
  const stream = new ReadableStream<Uint8Array>(
    {
      async start(controller) {
        let open = true
        const write = (bytes: Uint8Array) => {
          if (!open) return
          controller.enqueue(bytes)
          // desiredSize is the room left below the high-water mark: negative once the client falls behind.
          if ((controller.desiredSize ?? 0) < 0) stop()
        }
        write(encoder.encode('retry: 2000\n: connected\n\n'))
        const unsubscribe = await market
          .followFeed(resumeFrom, (events) => {
            for (const event of events) write(sseFrame(event))
          })
          .catch((error: unknown) => {
            release()
            throw error
          })
        const keepAlive = setInterval(() => write(encoder.encode(': keep-alive\n\n')), SSE_KEEPALIVE_MS)
        stop = () => {
          if (!open) return
          open = false
          clearInterval(keepAlive)
          unsubscribe()
          release()
          try {
            controller.close()
          } catch {}
        }
        if (request.signal.aborted) stop()
        request.signal.addEventListener('abort', stop, { once: true })
      },
      cancel() {
        stop()
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: SSE_MAX_QUEUED_BYTES }),
  )
  return new Response(stream, {
    headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store', 'x-accel-buffering': 'no' },
  })
}

/** The live feed, SPEC row 19: JSON pages, or a stream with `Accept: text/event-stream`. */
export function feedRoutes({ market, streams, clientOf }: RouteDeps) {
  return new Elysia().get(
    '/feed/live',
    ({ request, server }) =>
      (request.headers.get('accept') ?? '').includes('text/event-stream')
        ? feedStream(market, request, server, streams.open(clientOf(request, server)))
        : market.liveFeed(queryOf(request)),
    operation({
      id: 'liveFeed',
      summary:
        'Recent public events, newest first; with Accept: text/event-stream, a live stream (Last-Event-ID resumes)',
      tag: 'Feed',
      query: FeedQueryInput,
      ok: { status: 200, response: 'Feed', description: 'Events, or a text/event-stream', eventStream: true },
      problems: [400],
    }),
  )
}
