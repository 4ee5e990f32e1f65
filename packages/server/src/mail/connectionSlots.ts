import { addressSlots, NETWORK_CEILING_FACTOR } from '@agentmarket/core/routes'

/** How many SMTP connections the order mailbox holds: per client address, in all, and how long one may last. */
export type SmtpConnectionLimits = {
  /** Connections one client address (IPv6: its /64) may hold at once (SMTP_CLIENT_CONNECTIONS). */
  perClient: number
  /** Connections the listener holds in all (SMTP_CONNECTIONS_MAX); the last tenth only for addresses holding none. */
  total: number
  /** Seconds a session may last, whatever it sends (SMTP_SESSION_SECONDS): NOOPs do not keep it open. */
  sessionSeconds: number
}

/**
 * The defaults: a sending mail server opens a few connections to one destination (Postfix: up to 20 per destination,
 * one per message), the mailbox takes at most some hundreds of orders an hour, and a 256 KiB message takes seconds.
 */
export const DEFAULT_SMTP_CONNECTION_LIMITS: SmtpConnectionLimits = {
  perClient: 10,
  total: 100,
  sessionSeconds: 300,
}

/** The slots kept for addresses that hold no connection: a tenth of the total, at least one. */
export function reserveOf(total: number): number {
  return Math.max(1, Math.ceil(total / 10))
}

/** A taken slot (`release` gives it back, once), or why none was given: the client's words for the 421. */
export type SlotAnswer = { release: () => void } | { refused: string }

/**
 * Admission of SMTP connections by client address: each address holds at most `perClient`, and once all but the
 * reserve are open, only an address holding none gets one, so no single source can take the mailbox from others.
 * @example const slot = slots.take(session.remoteAddress); if ('refused' in slot) refuse(slot.refused)
 */
export function connectionSlots(limits: Pick<SmtpConnectionLimits, 'perClient' | 'total'>) {
  const slots = addressSlots({ ...limits, reserve: reserveOf(limits.total) })
  const words = {
    client: `Too many connections from your address (at most ${limits.perClient} at once); close one or try again later`,
    network: `Too many connections from your network (an IPv6 /48 holds at most ${limits.perClient * NETWORK_CEILING_FACTOR} at once); close one or try again later`,
    total: 'Too many connections; try again in a moment',
    reserve: 'Busy: the last connections are kept for senders holding none; close one or try again later',
  }
  return {
    /** Takes a slot for `address` (IPv6 by its /64), or says why it may not have one. */
    take(address: string): SlotAnswer {
      const slot = slots.take(address)
      return 'release' in slot ? slot : { refused: words[slot.refused] }
    },
    /** Connections admitted and not yet released. */
    get size() {
      return slots.size
    },
  }
}
