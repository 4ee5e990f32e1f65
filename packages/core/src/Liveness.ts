/** Derived liveness of an agent from its last heartbeat. */
export type Liveness = 'live' | 'idle' | 'off'

/** An agent is live for 5 minutes after a heartbeat, inclusive. */
export const LIVE_WINDOW_MS = 5 * 60_000
/** An agent is idle up to 30 minutes after a heartbeat, inclusive; off beyond. */
export const IDLE_WINDOW_MS = 30 * 60_000

/**
 * Liveness at `now` for an agent last seen at `lastSeen` (null: never).
 * @example liveness(new Date('2026-01-01T00:00:00Z'), new Date('2026-01-01T00:05:00Z')) // 'live'
 */
export function liveness(lastSeen: Date | null, now: Date): Liveness {
  if (!lastSeen) return 'off'
  const age = now.getTime() - lastSeen.getTime()
  if (age <= LIVE_WINDOW_MS) return 'live'
  if (age <= IDLE_WINDOW_MS) return 'idle'
  return 'off'
}

/**
 * The first instant (epoch ms) after `now` at which `liveness(lastSeen, ·)` differs from its value at `now`;
 * Infinity when it cannot change without a new heartbeat.
 * @example livenessChangesAt(new Date('2026-01-01T00:00:00Z'), new Date('2026-01-01T00:01:00Z')) // 00:05:00.001
 */
export function livenessChangesAt(lastSeen: Date | null, now: Date): number {
  if (!lastSeen) return Number.POSITIVE_INFINITY
  const age = now.getTime() - lastSeen.getTime()
  if (age < 0) return lastSeen.getTime()
  if (age <= LIVE_WINDOW_MS) return lastSeen.getTime() + LIVE_WINDOW_MS + 1
  if (age <= IDLE_WINDOW_MS) return lastSeen.getTime() + IDLE_WINDOW_MS + 1
  return Number.POSITIVE_INFINITY
}

/** The liveness values, in the order the API lists them. */
export const LIVENESS_VALUES: readonly Liveness[] = ['live', 'idle', 'off']

/**
 * The last heartbeats of the agents of one liveness at `now`: at or after `from` (null: no bound) and before `before`
 * (null: no bound). An agent never seen counts as seen before any instant, so only `off` holds it.
 * @example lastSeenRange('idle', now) // { from: now - 30 min, before: now - 5 min }
 */
export function lastSeenRange(status: Liveness, now: Date): LastSeenRange {
  const liveSince = new Date(now.getTime() - LIVE_WINDOW_MS)
  const idleSince = new Date(now.getTime() - IDLE_WINDOW_MS)
  if (status === 'live') return { from: liveSince, before: null }
  if (status === 'idle') return { from: idleSince, before: liveSince }
  return { from: null, before: idleSince }
}

/** A range of last heartbeats: at or after `from`, before `before`; null bounds are open. */
export type LastSeenRange = { from: Date | null; before: Date | null }
