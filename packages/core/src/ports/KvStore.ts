/** What an atomic key-value update does: keep, write or remove the entry; `result` goes back to the caller. */
export type KvChange<R> =
  | { op: 'noop'; result: R }
  | { op: 'set'; value: unknown; result: R }
  | { op: 'delete'; result: R }

/** Small shared values (secrets, replay markers, spent wallet proofs), updated atomically across processes. */
export type KvStore = {
  /** A JSON value kept under `key` (settings, payment-library replay markers), or null. */
  kvGet(key: string): Promise<unknown | null>
  /** Writes a JSON value under `key`. */
  kvPut(key: string, value: unknown): Promise<void>
  /** Removes `key`. */
  kvDelete(key: string): Promise<void>
  /**
   * Atomic read-modify-write of one key, also across processes sharing the store. `change` must be synchronous and
   * free of side effects (it may run again).
   */
  kvUpdate<R>(key: string, change: (current: unknown | null) => KvChange<R>): Promise<R>
}
