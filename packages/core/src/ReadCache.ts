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
  // Computations under way, by key and version: a burst of misses (an entry just expired under load) computes once,
  // instead of every request repeating the same query (a stampede).
  const pending = new Map<string, Promise<Expiring<Value>>>()
  const computeOnce = (key: string, version: string, compute: () => Promise<Expiring<Value>>) => {
    const flight = `${version}\u0000${key}`
    const running = pending.get(flight)
    if (running) return { fresh: running, joined: true }
    const fresh = compute().finally(() => pending.delete(flight))
    pending.set(flight, fresh)
    return { fresh, joined: false }
  }
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
      const { fresh, joined } = computeOnce(key, version, compute)
      const value = await fresh
      // A joined computation began before this read: its value serves it only while still valid at this read's time.
      if (joined && now.getTime() >= value.validUntil) return (await compute()).value
      if (!joined) {
        entries.delete(key)
        entries.set(key, { version, ...value })
        if (entries.size > maxEntries) entries.delete(entries.keys().next().value as string)
      }
      return value.value
    },
  }
}
