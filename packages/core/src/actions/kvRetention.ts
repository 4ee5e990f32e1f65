import type { KvStore } from '../ports/KvStore.ts'

// Key-value rows that must live until a known time and no longer (an x402 authorization marker until its
// authorization can no longer be settled) carry that time as their expiry; the store's sweep (kvSweepExpired) removes
// them once it has passed, in the background pass and beside keyed writes.

/**
 * Sets `key` to be removed once `at` has passed (by a later sweep); a time already past lets the next sweep remove
 * it, a time past any date (an authorization valid for ever) keeps it for ever. A key not written does nothing.
 */
export async function forgetAt(store: KvStore, key: string, at: Date): Promise<void> {
  if (!Number.isFinite(at.getTime())) return
  await store.kvUpdate(key, (current) =>
    current === null
      ? { op: 'noop', result: null }
      : { op: 'set', value: current, result: null, expiresAt: at },
  )
}

/** Removes every key of `keys` in one store write (KvStore.kvUpdateAll); an absent key, or none, costs no write. */
export async function forgetAll(store: KvStore, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return
  await store.kvUpdateAll(keys, (current) => ({
    writes: current.map(() => ({ op: 'delete' as const })),
    result: undefined,
  }))
}

/** Removes up to `limit` rows whose time had passed by `now`; returns how many it removed. */
export function sweepForgotten(store: KvStore, now: Date, limit: number): Promise<number> {
  return store.kvSweepExpired(now, limit)
}
