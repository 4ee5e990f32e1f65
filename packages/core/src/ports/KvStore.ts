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
  /** Removes up to `limit` entries whose expiry is at or before `now` (oldest first); answers how many it removed. */
  kvSweepExpired(now: Date, limit: number): Promise<number>
}
