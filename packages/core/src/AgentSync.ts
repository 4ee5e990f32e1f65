import * as v from 'valibot'
import { InvalidInputError } from './errors.ts'
import { withoutTrailing } from './Trim.ts'
import { noControlCharacters } from './Validation.ts'

/** Where a listing is in its life: listed, listed with a deprecation message, or withdrawn (kept as a tombstone). */
export const LISTING_STATES = ['active', 'deprecated', 'deleted'] as const
/** One of them. */
export type Listing = (typeof LISTING_STATES)[number]

/** The longest deprecation message. */
export const MAX_LISTING_MESSAGE = 500

/**
 * How far before a sync pass began its `next_updated_since` reaches back: a write stamped just before the pass but
 * committed during it, or stamped by a node whose clock is a little behind, is read again by the next sync rather
 * than missed. Syncs overlap by this much (a client upserts by name); they never leave a gap.
 */
export const SYNC_OVERLAP_MS = 60_000

/** The latest instant a Date holds (ECMAScript's limit). */
const LATEST_TIME = 8.64e15

/** The largest and default page of a sync. */
export const SYNC_PAGE = { default: 100, max: 100 } as const

/** Where a sync pass stands: after which name key, for which updated_since, begun when (all epoch ms). */
export type AgentSyncPosition = { after: string; since: number | null; began: number }

/** The opaque cursor of a position (base64url JSON: it only says where to resume, so tampering gains nothing). */
export function encodeSyncCursor(position: AgentSyncPosition): string {
  const json = JSON.stringify([position.after, position.since, position.began])
  return withoutTrailing(btoa(json).replaceAll('+', '-').replaceAll('/', '_'), '=')
}

/** The position of a cursor, or a 400 naming `cursor` when it is not one this server made. */
export function decodeSyncCursor(cursor: string): AgentSyncPosition {
  try {
    const text = atob(cursor.replaceAll('-', '+').replaceAll('_', '/'))
    const [after, since, began] = JSON.parse(text) as unknown[]
    // Times a Date can hold, so a forged cursor is a 400, never a failure later.
    const time = (value: unknown) =>
      typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= LATEST_TIME
    if (typeof after === 'string' && after.length <= 64 && (since === null || time(since)) && time(began))
      return { after, since: since as number | null, began: began as number }
  } catch {}
  throw new InvalidInputError(
    'invalid_query',
    'The query is invalid: cursor is not a cursor this server answered; send the next_cursor of the previous page, or start again with updated_since.',
    [{ pointer: '/cursor', detail: 'is not a cursor this server answered' }],
  )
}

/** The sync parameters of the agent list: a cursor to resume, or a time to start from. */
export const AgentSyncFields = {
  cursor: v.optional(
    v.pipe(
      v.string('must be a string'),
      v.maxLength(400, 'must be at most 400 characters'),
      v.description(
        'Sync: the next_cursor of the previous page. Pages go by name and include deprecated and deleted listings (tombstones); an agent changed while paging is never seen twice in one pass, and none is skipped.',
      ),
    ),
  ),
  updated_since: v.optional(
    v.pipe(
      v.string('must be a date-time text, e.g. "2026-11-26T07:00:00Z"'),
      v.isoTimestamp('must be a date-time text, e.g. "2026-11-26T07:00:00Z"'),
      v.description(
        "Sync: only agents changed at or after this time (listing, profile, skills, owner), tombstones included. Start the next sync from the last page's next_updated_since.",
      ),
    ),
  ),
} as const

/** Body fields of an agent update that move its listing. */
export const ListingFields = {
  listing: v.optional(
    v.pipe(
      v.picklist(LISTING_STATES, `must be one of ${LISTING_STATES.join(', ')}`),
      v.description(
        'active (listed), deprecated (listed, with listingMessage saying what to use instead), deleted (withdrawn: out of lists and search, takes no orders, kept as a tombstone for sync).',
      ),
    ),
  ),
  listingMessage: v.optional(
    v.nullable(
      v.pipe(
        v.string('must be a string'),
        noControlCharacters(),
        v.maxLength(MAX_LISTING_MESSAGE, `must be at most ${MAX_LISTING_MESSAGE} characters`),
      ),
    ),
  ),
} as const
