import type { KvStore } from '../ports/KvStore.ts'

// Key-value rows that must live until a known time and no longer (an x402 authorization marker until its
// authorization can no longer be settled) are listed under the hour they may go; a background pass removes the
// rows of every hour that has ended.

const HOUR_MS = 60 * 60 * 1000

/** How many past hours the first sweep of a store looks at (later sweeps start where the last one stopped). */
const FIRST_SWEEP_HOURS = 48

/** The most hours (one read each) one sweep looks at, so a pass after a long stop is bounded; the next ones catch up. */
const HOURS_PER_SWEEP = 14 * 24

const bucketOf = (hour: number) => `kv-forget:${hour}`
const CURSOR = 'kv-forget:swept-until'

/**
 * Lists `key` to be removed once `at` has passed (by the sweep of a later hour). A time already past (or within the
 * hour being swept) is listed an hour on, so no sweep has passed its hour yet.
 */
export async function forgetAt(store: KvStore, key: string, at: Date, now: Date): Promise<void> {
  // A time past any date (an authorization valid for ever): the row is kept for ever.
  if (!Number.isFinite(at.getTime())) return
  const hour = Math.max(Math.floor(at.getTime() / HOUR_MS), Math.floor(now.getTime() / HOUR_MS) + 1)
  await store.kvUpdate(bucketOf(hour), (current) => ({
    op: 'set',
    value: [...(Array.isArray(current) ? current : []), key],
    result: null,
  }))
}

/** Removes the rows listed under the hours that ended before `now`; returns how many rows it removed. */
export async function sweepForgotten(store: KvStore, now: Date): Promise<number> {
  const thisHour = Math.floor(now.getTime() / HOUR_MS)
  const swept = await store.kvGet(CURSOR)
  const from = typeof swept === 'number' ? swept : thisHour - FIRST_SWEEP_HOURS
  const until = Math.min(thisHour, from + HOURS_PER_SWEEP)
  let removed = 0
  for (let hour = from; hour < until; hour++) {
    const keys = await store.kvGet(bucketOf(hour))
    if (!Array.isArray(keys)) continue
    for (const key of keys) if (typeof key === 'string') await store.kvDelete(key)
    removed += keys.length
    await store.kvDelete(bucketOf(hour))
  }
  // Racing processes move the cursor forward only.
  await store.kvUpdate(CURSOR, (current) =>
    typeof current === 'number' && current >= until
      ? { op: 'noop', result: null }
      : { op: 'set', value: until, result: null },
  )
  return removed
}
