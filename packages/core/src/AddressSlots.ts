import { addressBucket, NETWORK_CEILING_FACTOR, networkBucket } from './RateLimit.ts'

/**
 * How many slots may be held at once: per client address (an IPv6 /48 holds at most NETWORK_CEILING_FACTOR times
 * that), in all, and how many of those only a source holding none may take.
 */
export type AddressSlotLimits = { perClient: number; total: number; reserve?: number }

/** A taken slot (`release` gives it back, once), or which limit refused it. */
export type AddressSlot = { release: () => void } | { refused: 'client' | 'network' | 'total' | 'reserve' }

/**
 * Admission of long-held things by client address (IPv6 by its /64): each address holds at most `perClient`, an IPv6
 * /48 (one site's allocation, 65,536 /64s) at most NETWORK_CEILING_FACTOR times that, all together at most `total`,
 * and the last `reserve` of the total go only to sources holding none (neither the address nor its /48), so no single
 * source can take them all. The live feed's streams and the SMTP listener's connections are both admitted by it.
 * @example const slot = slots.take(address); if ('release' in slot) socket.onClose(slot.release)
 */
export function addressSlots(limits: AddressSlotLimits) {
  const byClient = new Map<string, number>()
  const byNetwork = new Map<string, number>()
  const perNetwork = limits.perClient * NETWORK_CEILING_FACTOR
  const shared = limits.total - (limits.reserve ?? 0)
  let open = 0
  return {
    /** Takes a slot for `address`, or says which limit refused it. */
    take(address: string): AddressSlot {
      const client = addressBucket(address)
      const network = networkBucket(address)
      const held = byClient.get(client) ?? 0
      const siteHeld = network === null ? 0 : (byNetwork.get(network) ?? 0)
      if (held >= limits.perClient) return { refused: 'client' }
      if (siteHeld >= perNetwork) return { refused: 'network' }
      if (open >= limits.total) return { refused: 'total' }
      if ((held > 0 || siteHeld > 0) && open >= shared) return { refused: 'reserve' }
      byClient.set(client, held + 1)
      if (network !== null) byNetwork.set(network, siteHeld + 1)
      open += 1
      let released = false
      const release = () => {
        if (released) return
        released = true
        open -= 1
        release1(byClient, client)
        if (network !== null) release1(byNetwork, network)
      }
      return { release }
    },
    /** Slots taken and not yet released. */
    get size() {
      return open
    },
  }
}

/** One fewer held under `key`, forgetting the key at none. */
function release1(held: Map<string, number>, key: string) {
  const left = (held.get(key) ?? 1) - 1
  if (left === 0) held.delete(key)
  else held.set(key, left)
}
