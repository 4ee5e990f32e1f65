import { SYNC_OVERLAP_MS } from '../AgentSync.ts'
import { InvalidInputError } from '../errors.ts'
import { type FeedEventView, FeedQueryInput, toFeedEventView } from '../Feed.ts'
import type { FeedListener } from '../FeedHub.ts'
import type { FeedStore } from '../ports/Store.ts'
import { parseInput } from '../Validation.ts'
import type { ActionContext } from './context.ts'

/** The opaque cursor of a feed position (an event id): `f` and the id in base 36. */
const feedCursor = (id: string) => `f${Number(id).toString(36)}`

/** The event id a feed cursor stands for, or a 400 naming `cursor`. */
function feedCursorPosition(cursor: string): string {
  const id = /^f[0-9a-z]{1,11}$/.test(cursor) ? Number.parseInt(cursor.slice(1), 36) : Number.NaN
  if (Number.isSafeInteger(id)) return String(id)
  throw new InvalidInputError(
    'invalid_query',
    'The query is invalid: cursor is not a feed cursor this server answered; send the next_cursor of the previous page.',
    [{ pointer: '/cursor', detail: 'is not a feed cursor this server answered' }],
  )
}

/**
 * The id after which the feed's events at or after `since` begin: a binary search over event ids by each one's time
 * (events are recorded in time order, save a payment's time, which may be a little earlier), in about 40 point reads
 * whatever the feed's size.
 */
async function firstEventAt(store: FeedStore, since: Date): Promise<string> {
  const [newest] = await store.listEvents({ limit: 1 })
  let low = 0
  let high = Number(newest?.id ?? 0)
  while (low < high) {
    const middle = Math.floor((low + high) / 2)
    const [first] = await store.listEvents({ after: String(middle), limit: 1 })
    if (!first || first.at >= since) high = middle
    else low = Number(first.id)
  }
  return String(low)
}

/** The live feed: pages of recent events and a subscription to new ones. */
export function feedActions({ store, feed }: ActionContext<FeedStore>) {
  return {
    /**
     * Recent public events, newest first (`limit`, `after`, `before`). Sync (`updated_since`, then `cursor`): the events
     * from that time on, oldest first, with `next_cursor` to ask for the ones after them.
     */
    async liveFeed(query: unknown): Promise<{ events: FeedEventView[]; next_cursor?: string }> {
      const input = parseInput(FeedQueryInput, query ?? {}, 'invalid_query')
      const { limit, after, before, cursor, updated_since } = input
      if (cursor === undefined && updated_since === undefined)
        return { events: (await store.listEvents({ limit, after, before })).map(toFeedEventView) }
      if ([after, before].some((given) => given !== undefined) || (cursor && updated_since))
        throw new InvalidInputError(
          'invalid_query',
          'The query is invalid: a feed sync takes cursor or updated_since (with limit), alone.',
          [
            {
              pointer: cursor ? '/cursor' : '/updated_since',
              detail: 'is sent with another position; send it alone',
            },
          ],
        )
      // From a minute before: events stamped a little out of order (a node's clock behind, a payment's own time) are
      // not lost to the search; a sync may see a few events before `updated_since`, never miss one after it.
      const since = new Date(Date.parse(updated_since ?? '') - SYNC_OVERLAP_MS)
      const from = cursor ? feedCursorPosition(cursor) : await firstEventAt(store, since)
      const events = (await store.listEvents({ limit, after: from })).reverse().map(toFeedEventView)
      return { events, next_cursor: feedCursor(events.at(-1)?.id ?? from) }
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
