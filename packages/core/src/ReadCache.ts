/** A value and the instant (epoch ms) until which it stays right if nothing is written. */
export type Expiring<Value> = { value: Value; validUntil: number }

/** How many entries a read cache keeps; the oldest goes first. */
export const READ_CACHE_ENTRIES = 2_000

/**
 * A bounded memo of public reads. An entry answers while the store's change version is the one it was computed
 * under and `now` is before its `validUntil` (reads show liveness, which moves with time alone). Without a version
 * (a store without `changeVersion`), every read is computed.
 * @example const card = await cards.read(name, await store.changeVersion?.(), clock.now(), () => buildCard())
 */
export function readCache<Value>(maxEntries = READ_CACHE_ENTRIES) {
  const entries = new Map<string, { version: string } & Expiring<Value>>()
  return {
    /** The cached value of `key`, or `compute`'s, kept under `version`. */
    async read(
      key: string,
      version: string | undefined,
      now: Date,
      compute: () => Promise<Expiring<Value>>,
    ): Promise<Value> {
      if (version === undefined) return (await compute()).value
      const hit = entries.get(key)
      if (hit && hit.version === version && now.getTime() < hit.validUntil) return hit.value
      // The version was read before computing: a write racing the computation leaves an entry under an older
      // version, which the next read recomputes. A stale value is never kept under a newer version.
      const fresh = await compute()
      entries.delete(key)
      entries.set(key, { version, ...fresh })
      if (entries.size > maxEntries) entries.delete(entries.keys().next().value as string)
      return fresh.value
    },
  }
}
