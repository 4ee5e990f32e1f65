import type { IdempotencyQuota } from '../Config.ts'
import type { KvChange } from '../ports/KvStore.ts'

// Each client's kept answers are counted in one key-value row per owner (a client address, its IPv6 network, an API
// key): the answers kept and their stored bytes per hour, for the 25 hours whose answers may still be kept. A row is
// therefore at most 25 small slots, whatever the client writes; each charge pushes its expiry to the end of its
// latest hour's 25, so the store's sweep removes it once its last answers are forgotten.

/** Who is charged for a kept answer (an opaque name), and how many quotas it may hold (a network holds several). */
export type QuotaOwner = { id: string; share: number }

/** One hour's kept answers of an owner: the hour (ms / 1 h), how many, and their stored bytes. */
type Slot = [hour: number, answers: number, bytes: number]

/** How a charge went: refused (over the quota) or charged. */
export type Charge = 'refused' | 'charged'

/** Hours a slot counts: an answer kept in hour h is forgotten by the end of hour h + 24 (IDEMPOTENCY_TTL_MS). */
export const QUOTA_HOURS = 25

const HOUR_MS = 60 * 60 * 1000

const isSlot = (value: unknown): value is Slot =>
  Array.isArray(value) && value.length === 3 && value.every((part) => typeof part === 'number')

/** The slots of a row whose answers may still be kept in `hour`. */
function liveSlots(row: unknown, hour: number): Slot[] {
  const slots = typeof row === 'object' && row !== null && 'slots' in row ? row.slots : null
  return Array.isArray(slots) ? slots.filter(isSlot).filter(([at]) => at > hour - QUOTA_HOURS) : []
}

/**
 * The change that charges one answer of `bytes` to an owner's row in `hour`, unless it would pass `limit` (`force`: a
 * secret shown once is kept whatever the quota, and counted).
 */
export function chargeRow(
  row: unknown,
  hour: number,
  bytes: number,
  limit: IdempotencyQuota,
  force: boolean,
): KvChange<Charge> {
  const slots = liveSlots(row, hour)
  const answers = slots.reduce((sum, slot) => sum + slot[1], 0)
  const stored = slots.reduce((sum, slot) => sum + slot[2], 0)
  if (!force && (answers + 1 > limit.answers || stored + bytes > limit.bytes))
    return { op: 'noop', result: 'refused' }
  const open = slots.some(([at]) => at === hour)
  const next: Slot[] = open
    ? slots.map((slot) => (slot[0] === hour ? [hour, slot[1] + 1, slot[2] + bytes] : slot))
    : [...slots, [hour, 1, bytes]]
  // A row charged by a node whose clock is behind keeps the later hour's expiry.
  const latest = Math.max(...next.map(([at]) => at))
  return {
    op: 'set',
    value: { slots: next },
    result: 'charged',
    expiresAt: new Date((latest + QUOTA_HOURS) * HOUR_MS),
  }
}

/** The change that gives back one answer of `bytes` charged in `hour` (a later owner refused it). */
export function refundRow(row: unknown, hour: number, bytes: number): KvChange<null> {
  const slots = liveSlots(row, hour)
  if (!slots.some(([at]) => at === hour)) return { op: 'noop', result: null }
  const next = slots.map(
    (slot): Slot =>
      slot[0] === hour ? [hour, Math.max(0, slot[1] - 1), Math.max(0, slot[2] - bytes)] : slot,
  )
  return { op: 'set', value: { slots: next }, result: null }
}

/** The owner's limit: the quota times its share. */
export const limitOf = (quota: IdempotencyQuota, owner: QuotaOwner): IdempotencyQuota => ({
  answers: quota.answers * owner.share,
  bytes: quota.bytes * owner.share,
})
