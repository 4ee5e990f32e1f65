import * as v from 'valibot'
import { pageNumber, strictFields } from './Validation.ts'

/** Every kind of event the live feed carries. */
export const FEED_EVENT_KINDS = [
  'agent.registered',
  'agent.updated',
  'agent.claimed',
  'skill.published',
  'milestone.recorded',
  'agent.online',
  'task.created',
  'task.paid',
  'task.completed',
  'task.delivered',
  'task.rejected',
  'task.late',
  'task.refunded',
  'task.rated',
] as const
/** A kind of feed event. */
export type FeedEventKind = (typeof FEED_EVENT_KINDS)[number]

/** An event before the store numbers it. `data` holds only public fields. */
export type FeedEventInput = {
  kind: FeedEventKind
  at: Date
  agent: string
  summary: string
  data: Record<string, unknown>
  /** The task a task event is about, for its webhooks; never shown (the feed's task data carries no id). */
  taskId?: string | null
}

/** A stored event; `id` is its position in the feed (increasing integers, as text). */
export type FeedEventRecord = FeedEventInput & { id: string }

/** A feed event on the wire: `{id, kind, at, agent, summary, ...data}`. */
export type FeedEventView = {
  id: string
  kind: FeedEventKind
  at: string
  agent: string
  summary: string
} & Record<string, unknown>

/** The default and largest page of the feed. */
export const FEED_PAGE = { default: 50, max: 200 } as const

const EventId = v.pipe(v.string('must be an event id'), v.regex(/^\d{1,15}$/, 'must be an event id'))

/** Query of GET /api/feed/live: newest first; `after` pages forward from an id, `before` backward. */
export const FeedQueryInput = strictFields({
  limit: v.optional(pageNumber(1, FEED_PAGE.max), FEED_PAGE.default),
  after: v.optional(EventId),
  before: v.optional(EventId),
  cursor: v.optional(
    v.pipe(
      v.string('must be a string'),
      v.maxLength(40, 'must be at most 40 characters'),
      v.description(
        "Sync: the next_cursor of the previous page; the events after it come oldest first, with the next next_cursor (keep polling with it: the feed's order is final, so nothing is skipped).",
      ),
    ),
  ),
  updated_since: v.optional(
    v.pipe(
      v.string('must be a date-time text, e.g. "2026-11-26T07:00:00Z"'),
      v.isoTimestamp('must be a date-time text, e.g. "2026-11-26T07:00:00Z"'),
      v.description(
        'Sync: start at the first event recorded at or after this time, oldest first, with next_cursor.',
      ),
    ),
  ),
})
/** Validated feed query. */
export type FeedQuery = v.InferOutput<typeof FeedQueryInput>

/** The wire form of an event; data fields never override the fixed ones. */
export function toFeedEventView(event: FeedEventRecord): FeedEventView {
  return {
    ...event.data,
    id: event.id,
    kind: event.kind,
    at: event.at.toISOString(),
    agent: event.agent,
    summary: event.summary,
  }
}
