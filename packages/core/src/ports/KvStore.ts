/**
 * When an entry may be removed: a time (`kvSweepExpired` removes it once that time has passed), or null for never.
 * Absent on a write: the entry keeps the expiry it had (none for a new entry).
 */
export type KvExpiry = { expiresAt?: Date | null }

/** What an atomic key-value update does: keep, write or remove the entry; `result` goes back to the caller. */
export type KvChange<R> =
  | { op: 'noop'; result: R }
  | ({ op: 'set'; value: unknown; result: R } & KvExpiry)
  | { op: 'delete'; result: R }

/** One key's part of an atomic update of several keys (kvUpdateAll): keep, write or remove its entry. */
export type KvWrite = { op: 'noop' } | ({ op: 'set'; value: unknown } & KvExpiry) | { op: 'delete' }

/** Small shared values (secrets, replay markers, spent wallet proofs), updated atomically across processes. */
export type KvStore = {
  /**
   * A JSON value kept under `key` (settings, payment-library replay markers), or null. An entry past its expiry is
   * still read until a sweep removes it: callers that need an exact end keep it in the value.
   */
  kvGet(key: string): Promise<unknown | null>
  /** Writes a JSON value under `key`, with its expiry (`KvExpiry`). */
  kvPut(key: string, value: unknown, options?: KvExpiry): Promise<void>
  /** Removes `key`. */
  kvDelete(key: string): Promise<void>
  /**
   * Atomic read-modify-write of one key, also across processes sharing the store. `change` must be synchronous and
   * free of side effects (it may run again).
   */
  kvUpdate<R>(key: string, change: (current: unknown | null) => KvChange<R>): Promise<R>
  /**
   * Atomic read-modify-write of several keys in one write, also across processes: `change` sees each key's value (in
   * `keys`' order, null when absent) and answers one write per key; the writes land all together and only while every
   * entry written still holds what `change` saw, else `change` runs again on the new values. A key left alone (`noop`,
   * or removing an absent entry) is not held. `change` as kvUpdate's.
   */
  kvUpdateAll<R>(
    keys: readonly string[],
    change: (current: (unknown | null)[]) => { writes: KvWrite[]; result: R },
  ): Promise<R>
  /** Removes up to `limit` entries whose expiry is at or before `now` (oldest first); answers how many it removed. */
  kvSweepExpired(now: Date, limit: number): Promise<number>
}
