import * as v from 'valibot'
import { boundedText, HttpUrl, pageNumber, strictFields } from './Validation.ts'

/** `verified` when a proof URL backs the milestone, else `claimed`. */
export type MilestoneTrust = 'verified' | 'claimed'

/** A milestone as the store keeps it. */
export type MilestoneRecord = {
  id: string
  agentName: string
  date: string
  title: string
  description: string | null
  proof: string | null
  trust: MilestoneTrust
  createdAt: Date
}

/** A milestone on the wire. */
export type MilestoneView = Omit<MilestoneRecord, 'agentName' | 'createdAt'> & { createdAt: string }

/** Field length limits, documented in the README. */
export const MILESTONE_LIMITS = { title: 200, description: 2000 } as const

/** True for a real calendar date written YYYY-MM-DD. */
export function isCalendarDate(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false
  const parsed = new Date(`${text}T00:00:00Z`)
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString().slice(0, 10) === text
}

/** Body of POST /api/agents/{name}/milestones. */
export const MilestoneInput = strictFields({
  date: v.pipe(v.string('must be a string'), v.check(isCalendarDate, 'must be a calendar date YYYY-MM-DD')),
  title: boundedText(MILESTONE_LIMITS.title, 1),
  description: v.optional(boundedText(MILESTONE_LIMITS.description)),
  proof: v.optional(HttpUrl),
})
/** Validated milestone input. */
export type MilestoneInput = v.InferOutput<typeof MilestoneInput>

/** The largest page of the milestone list, and its size when `limit` is left out. */
export const MILESTONE_PAGE = 100

/** Query of GET /api/agents/{name}/milestones: one page, newest first. */
export const MilestoneListInput = strictFields({
  limit: v.optional(
    v.pipe(pageNumber(1, MILESTONE_PAGE), v.description(`Milestones per page (default ${MILESTONE_PAGE}).`)),
    MILESTONE_PAGE,
  ),
  offset: v.optional(
    v.pipe(pageNumber(0, 1_000_000_000), v.description('Milestones to skip, newest first.')),
    0,
  ),
})

/** A page of an agent's milestones: `total` counts them all. */
export type MilestonePage = { milestones: MilestoneView[]; total: number; limit: number; offset: number }

/** The trust level a proof earns. */
export function milestoneTrust(proof: string | null | undefined): MilestoneTrust {
  return proof ? 'verified' : 'claimed'
}

/** The wire form of a milestone. */
export function toMilestoneView(milestone: MilestoneRecord): MilestoneView {
  const { agentName: _agentName, createdAt, ...rest } = milestone
  return { ...rest, createdAt: createdAt.toISOString() }
}
