import { addressSlots } from '../AddressSlots.ts'
import { TooManyStreamsError } from '../errors.ts'
import { NETWORK_CEILING_FACTOR } from '../RateLimit.ts'

/** How many live streams may be open at once: per client address, and in this process. */
export type StreamLimits = { perClient: number; total: number }

/** The defaults: a browser tab or two per person behind a NAT, and a bound on one process's memory. */
export const DEFAULT_STREAM_LIMITS: StreamLimits = { perClient: 10, total: 1_000 }

/**
 * Admission of long-lived streams (the live feed): `open` takes a slot for a client address and returns its release,
 * or throws TooManyStreamsError (429) when the client or the process holds as many as it may.
 * @example const release = slots.open(address); stream.onClose(release)
 */
export function streamSlots(limits: StreamLimits = DEFAULT_STREAM_LIMITS) {
  const slots = addressSlots(limits)
  return {
    /** Takes a slot for `address` (IPv6 by its /64); the function it returns gives it back (once). */
    open(address: string): () => void {
      const slot = slots.take(address)
      if ('release' in slot) return slot.release
      throw new TooManyStreamsError(
        slot.refused === 'client'
          ? `At most ${limits.perClient} live streams per client address are open at once; close one, or retry later.`
          : slot.refused === 'network'
            ? `At most ${limits.perClient * NETWORK_CEILING_FACTOR} live streams per IPv6 /48 are open at once; close one, or retry later.`
            : `The server holds its ${limits.total} live streams; retry later, or read GET /api/feed/live pages meanwhile.`,
      )
    },
    /** Streams open now. */
    get size() {
      return slots.size
    },
  }
}

/** The stream admission a server keeps, as routes receive it. */
export type StreamSlots = ReturnType<typeof streamSlots>
