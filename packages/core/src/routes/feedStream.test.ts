import { describe, expect, test } from 'bun:test'
import type { FeedEventView } from '../Feed.ts'
import type { MarketplaceActions } from '../Marketplace.ts'
import { feedStream, SSE_MAX_QUEUED_BYTES } from './feedStream.ts'

describe('feedStream', () => {
  test('error: a client that stops reading is dropped once SSE_MAX_QUEUED_BYTES wait for it', async () => {
    const feed: { listener?: (events: FeedEventView[]) => void } = {}
    let unsubscribed = false
    const market = {
      followFeed: async (_after: string | undefined, follow: (events: FeedEventView[]) => void) => {
        feed.listener = follow
        return () => {
          unsubscribed = true
        }
      },
    } as unknown as MarketplaceActions
    let released = 0
    const response = await feedStream(market, new Request('http://localhost/api/feed/live'), () => {
      released += 1
    })
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    await Bun.sleep(0)
    const event = { id: '1', kind: 'agent.registered', summary: 'x'.repeat(1000) } as unknown as FeedEventView
    // Nobody reads the body: each batch waits in the stream's queue.
    for (let sent = 0; sent <= SSE_MAX_QUEUED_BYTES && !unsubscribed; sent += 100 * 1000)
      feed.listener?.(Array.from({ length: 100 }, () => event))
    expect(unsubscribed).toBe(true)
    expect(released).toBe(1)
  })

  test('error: a stream cancelled while it subscribes unsubscribes and releases once, and writes nothing after', async () => {
    let subscribed: (events: FeedEventView[]) => void = () => {}
    let unsubscribed = 0
    let resolveFollow: () => void = () => {}
    const market = {
      followFeed: (_after: string | undefined, follow: (events: FeedEventView[]) => void) =>
        new Promise<() => void>((resolve) => {
          subscribed = follow
          resolveFollow = () =>
            resolve(() => {
              unsubscribed += 1
            })
        }),
    } as unknown as MarketplaceActions
    let released = 0
    const response = await feedStream(market, new Request('http://localhost/api/feed/live'), () => {
      released += 1
    })
    await response.body?.cancel()
    resolveFollow()
    await Bun.sleep(1)
    subscribed([{ id: '1', kind: 'agent.registered' } as unknown as FeedEventView])
    expect(unsubscribed).toBe(1)
    expect(released).toBe(1)
  })
})
