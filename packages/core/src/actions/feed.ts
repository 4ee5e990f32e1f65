import { type FeedEventView, FeedQueryInput, toFeedEventView } from '../Feed.ts'
import type { FeedListener } from '../FeedHub.ts'
import { parseInput } from '../Validation.ts'
import type { ActionContext } from './context.ts'

/** The live feed: pages of recent events and a subscription to new ones. */
export function feedActions({ store, feed }: ActionContext) {
  return {
    /** Recent public events, newest first (`limit`, `after`, `before`). */
    async liveFeed(query: unknown): Promise<{ events: FeedEventView[] }> {
      const { limit, after, before } = parseInput(FeedQueryInput, query ?? {}, 'invalid_query')
      return { events: (await store.listEvents({ limit, after, before })).map(toFeedEventView) }
    },

    /**
     * Follows the feed: first the events after `lastEventId` (when given, up to 200), then each new event as it is
     * stored, oldest first, each exactly once. Returns the unsubscribe function.
     */
    async followFeed(lastEventId: string | undefined, listener: FeedListener): Promise<() => void> {
      let newest = 0
      const forward = (events: FeedEventView[]) => {
        const unseen = events.filter((event) => Number(event.id) > newest)
        if (unseen.length === 0) return
        newest = Number(unseen.at(-1)?.id)
        listener(unseen)
      }
      const unsubscribe = await feed.subscribe(forward)
      if (lastEventId !== undefined && /^\d{1,15}$/.test(lastEventId)) {
        const missed = await store.listEvents({ after: lastEventId, limit: 200 })
        forward(missed.reverse().map(toFeedEventView))
      }
      return unsubscribe
    },

    /** How many followers are listening. */
    followerCount(): number {
      return feed.size
    },
  }
}
