import { type FeedEventView, toFeedEventView } from './Feed.ts'
import { outsideRequest } from './ports/requestScope.ts'
import type { FeedStore, StoreLifecycle } from './ports/Store.ts'

/** Receives new feed events, oldest first. */
export type FeedListener = (events: FeedEventView[]) => void

/** Fans new feed events out to live subscribers. */
export type FeedHub = {
  /** Starts delivering events newer than the newest one now stored; returns the unsubscribe function. */
  subscribe(listener: FeedListener): Promise<() => void>
  /** Asks for a prompt look at the store, after this process wrote an event. */
  nudge(): void
  /** How many subscribers are listening. */
  readonly size: number
}

/** How often the hub reads the store while anyone listens, to catch events other processes wrote. */
export const FEED_POLL_MS = 250
/** The same, for a store that announces other processes' events (Store.watchEvents): only for a notice lost. */
export const FEED_FALLBACK_POLL_MS = 2_000

/**
 * A hub over the store's event table: nudged in-process after each write and, where the store announces them, on
 * other processes' events; polling while it has subscribers. `onNudge` tells the host of each in-process write (its
 * webhook sender wakes on it instead of polling fast at rest).
 * @example const unsubscribe = await hub.subscribe((events) => send(events))
 */
export function createFeedHub(
  store: FeedStore & Pick<StoreLifecycle, 'watchEvents'>,
  pollMs = FEED_POLL_MS,
  onNudge?: () => void,
): FeedHub {
  const listeners = new Set<FeedListener>()
  let newestId = '0'
  let timer: ReturnType<typeof setInterval> | undefined
  let unwatch: (() => void) | undefined
  let reading: Promise<void> | undefined
  let readAgain = false

  const deliver = async () => {
    for (;;) {
      readAgain = false
      const fresh = (await store.listEvents({ after: newestId, limit: 200 })).reverse()
      if (fresh.length) {
        newestId = fresh.at(-1)?.id ?? newestId
        const views = fresh.map(toFeedEventView)
        for (const listener of listeners) listener(views)
      }
      if (!readAgain && fresh.length < 200) return
    }
  }

  const read = () => {
    if (listeners.size === 0) return
    if (reading) {
      readAgain = true
      return
    }
    reading = deliver()
      .catch(() => {})
      .finally(() => {
        reading = undefined
      })
  }

  return {
    async subscribe(listener) {
      if (listeners.size === 0) {
        newestId = (await store.listEvents({ limit: 1 }))[0]?.id ?? '0'
        // The hub's reads serve every subscriber, not the request that happened to subscribe first.
        outsideRequest(() => {
          unwatch = store.watchEvents?.(read)
          timer = setInterval(read, unwatch ? Math.max(pollMs, FEED_FALLBACK_POLL_MS) : pollMs)
        })
      }
      listeners.add(listener)
      return () => {
        listeners.delete(listener)
        if (listeners.size === 0 && timer) {
          clearInterval(timer)
          timer = undefined
          unwatch?.()
          unwatch = undefined
        }
      }
    },
    nudge() {
      // Called by the request that wrote: what it sets going (the read, the host's woken passes) outlives it.
      outsideRequest(() => {
        onNudge?.()
        read()
      })
    },
    get size() {
      return listeners.size
    },
  }
}
