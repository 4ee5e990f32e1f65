import { describe, expect, test } from 'bun:test'
import type { FeedEventView, MarketplaceActions } from '@agentmarket/core'
import { feedStream, SSE_MAX_QUEUED_BYTES } from './feed.ts'
import { streamSlots } from './streamSlots.ts'

describe('streamSlots', () => {
  test('behavior: a client gets perClient slots (IPv6 by its /64), all clients total; a release frees one, once', () => {
    const slots = streamSlots({ perClient: 2, total: 3 })
    const first = slots.open('198.51.100.1')
    slots.open('198.51.100.1')
    expect(() => slots.open('198.51.100.1')).toThrow('At most 2 live streams per client address')
    slots.open('2001:db8:1:2::1')
    expect(() => slots.open('2001:db8:1:2::2')).toThrow('The server holds its 3 live streams')
    first()
    first()
    expect(slots.size).toBe(2)
    expect(() => slots.open('2001:db8:1:2::2')).not.toThrow()
    expect(() => slots.open('2001:db8:1:2:ffff::9')).toThrow('per client address')
  })
})

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
    const response = await feedStream(market, new Request('http://localhost/api/feed/live'), null, () => {
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
})
