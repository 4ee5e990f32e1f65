import { addressBucket } from './RateLimit.ts'

/** How many slots may be held at once: per client address, in all, and how many of those only an address holding none may take. */
export type AddressSlotLimits = { perClient: number; total: number; reserve?: number }

/** A taken slot (`release` gives it back, once), or which limit refused it. */
export type AddressSlot = { release: () => void } | { refused: 'client' | 'total' | 'reserve' }

/**
 * Admission of long-held things by client address (IPv6 by its /64): each address holds at most `perClient`, all
 * together at most `total`, and the last `reserve` of the total go only to addresses holding none, so no single
 * source can take them all. The live feed's streams and the SMTP listener's connections are both admitted by it.
 * @example const slot = slots.take(address); if ('release' in slot) socket.onClose(slot.release)
 */
export function addressSlots(limits: AddressSlotLimits) {
  const byClient = new Map<string, number>()
  const shared = limits.total - (limits.reserve ?? 0)
  let open = 0
  return {
    /** Takes a slot for `address`, or says which limit refused it. */
    take(address: string): AddressSlot {
      const client = addressBucket(address)
      const held = byClient.get(client) ?? 0
      if (held >= limits.perClient) return { refused: 'client' }
      if (open >= limits.total) return { refused: 'total' }
      if (held > 0 && open >= shared) return { refused: 'reserve' }
      byClient.set(client, held + 1)
      open += 1
      let released = false
      const release = () => {
        if (released) return
        released = true
        open -= 1
        const left = (byClient.get(client) ?? 1) - 1
        if (left === 0) byClient.delete(client)
        else byClient.set(client, left)
      }
      return { release }
    },
    /** Slots taken and not yet released. */
    get size() {
      return open
    },
  }
}
