import type { FeedEventView } from '../Feed.ts'
import type { MarketplaceActions } from '../Marketplace.ts'

/** How often an idle stream sends a comment, so proxies keep it open. */
export const SSE_KEEPALIVE_MS = 15_000

/**
 * Bytes a stream may hold for a client that does not read them (after what the socket took): past this, the client is
 * too far behind to catch up, and the stream is closed rather than grown without bound.
 */
export const SSE_MAX_QUEUED_BYTES = 256 * 1024

const encoder = new TextEncoder()

/** One server-sent event per feed event; `id:` lets a client resume with Last-Event-ID. */
function sseFrame(event: FeedEventView): Uint8Array {
  return encoder.encode(`id: ${event.id}\ndata: ${JSON.stringify(event)}\n\n`)
}

/** True when a request asks for the live feed as a stream (`Accept: text/event-stream`). */
export const wantsEventStream = (headers: Headers) =>
  (headers.get('accept') ?? '').includes('text/event-stream')

/**
 * A text/event-stream of new feed events (resuming after Last-Event-ID or `?after=`) that ends cleanly when the
 * client leaves, or when it stops reading and SSE_MAX_QUEUED_BYTES wait for it; `release` is called once when it ends.
 */
export async function feedStream(
  market: MarketplaceActions,
  request: Request,
  release: () => void = () => {},
): Promise<Response> {
  const resumeFrom =
    request.headers.get('last-event-id') ?? new URL(request.url).searchParams.get('after') ?? undefined
  let open = true
  let stop = () => {}
  const stream = new ReadableStream<Uint8Array>(
    {
      async start(controller) {
        let cleanup = () => {}
        stop = () => {
          if (!open) return
          open = false
          cleanup()
          release()
          try {
            controller.close()
          } catch {}
        }
        const write = (bytes: Uint8Array) => {
          if (!open) return
          try {
            controller.enqueue(bytes)
          } catch {
            // The host closed the stream under us (its client left): end ours too.
            return stop()
          }
          // desiredSize is the room left below the high-water mark: negative once the client falls behind.
          if ((controller.desiredSize ?? 0) < 0) stop()
        }
        write(encoder.encode('retry: 2000\n: connected\n\n'))
        const unsubscribe = await market
          .followFeed(resumeFrom, (events) => {
            for (const event of events) write(sseFrame(event))
          })
          .catch((error: unknown) => {
            if (open) {
              open = false
              release()
            }
            throw error
          })
        const keepAlive = setInterval(() => write(encoder.encode(': keep-alive\n\n')), SSE_KEEPALIVE_MS)
        cleanup = () => {
          clearInterval(keepAlive)
          unsubscribe()
        }
        // Cancelled while subscribing: nothing will call stop again.
        if (!open) return cleanup()
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
