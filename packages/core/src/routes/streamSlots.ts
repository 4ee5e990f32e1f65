import { TooManyStreamsError } from '../errors.ts'
import { addressBucket } from '../RateLimit.ts'

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
  const byClient = new Map<string, number>()
  let open = 0
  return {
    /** Takes a slot for `address` (IPv6 by its /64); the function it returns gives it back (once). */
    open(address: string): () => void {
      const client = addressBucket(address)
      const held = byClient.get(client) ?? 0
      if (held >= limits.perClient)
        throw new TooManyStreamsError(
          `At most ${limits.perClient} live streams per client address are open at once; close one, or retry later.`,
        )
      if (open >= limits.total)
        throw new TooManyStreamsError(
          `The server holds its ${limits.total} live streams; retry later, or read GET /api/feed/live pages meanwhile.`,
        )
      byClient.set(client, held + 1)
      open += 1
      let released = false
      return () => {
        if (released) return
        released = true
        open -= 1
        const left = (byClient.get(client) ?? 1) - 1
        if (left === 0) byClient.delete(client)
        else byClient.set(client, left)
      }
    },
    /** Streams open now. */
    get size() {
      return open
    },
  }
}

/** The stream admission a server keeps, as routes receive it. */
export type StreamSlots = ReturnType<typeof streamSlots>
