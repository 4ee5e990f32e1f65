import type { AgentProfile, AgentRecord } from './Agent.ts'
import type { Listing } from './AgentSync.ts'
import {
  type DeliveryRecordView,
  deliveryRecordView,
  type RatingSummaryView,
  ratingSummaryView,
} from './Job.ts'
import { type Liveness, liveness } from './Liveness.ts'
import type { MilestoneView } from './Milestone.ts'
import { type SkillView, toSkillView } from './Skill.ts'
import { trustScore } from './Trust.ts'

// An agent as the API shows it: its public record, its row in lists, its heartbeat and links.

/** Liveness as shown on the wire. */
export type HeartbeatView = { status: Liveness; lastSeen: string | null }

/** The public Agent record (SPEC row 3 and row 6). Never a key, never a pairing code. */
export type AgentView = AgentProfile & {
  skills: SkillView[]
  status: 'free'
  heartbeat: HeartbeatView
  milestones: MilestoneView[]
  trustScore: number
  /** Its jobs: completed, on time, late, disputes and refunds (docs/jobs.md). */
  deliveries: DeliveryRecordView
  /** Ratings by the wallets that paid its tasks. */
  ratings: RatingSummaryView
  owner: { username: string } | null
  createdAt: string
  /** When its listing, profile, skills or owner last changed (what sync's updated_since compares). */
  updatedAt: string
  /** Its listing's state (active, deprecated, deleted) and, when deprecated, why. */
  listing: Listing
  listingMessage: string | null
  cardUrl: string
  pageUrl: string
}

/** A skill as a row of the agent list shows it: what it is and what it costs. */
export type SkillBrief = Pick<SkillView, 'name' | 'slug' | 'type' | 'price' | 'currency' | 'sla'>

/** One row of the agent list (SPEC row 2), with its skills in brief (an addition: a search shows what each sells). */
export type AgentSummary = Omit<AgentView, 'skills' | 'milestones'> & {
  skillCount: number
  purchasableCount: number
  skills: SkillBrief[]
}

/** Public links of an agent. */
export function agentLinks(baseUrl: string, name: string): { cardUrl: string; pageUrl: string } {
  const path = encodeURIComponent(name)
  return { cardUrl: `${baseUrl}/api/agents/${path}/agent-card.json`, pageUrl: `${baseUrl}/agents/${path}` }
}

/** The heartbeat object at `now`. */
export function heartbeatView(agent: AgentRecord, now: Date): HeartbeatView {
  return { status: liveness(agent.lastSeen, now), lastSeen: agent.lastSeen?.toISOString() ?? null }
}

/** Builds the list row of an agent. */
export function toAgentSummary(agent: AgentRecord, now: Date, baseUrl: string): AgentSummary {
  const { skills, ...rest } = toAgentView(agent, [], now, baseUrl)
  return {
    ...withoutMilestones(rest),
    skillCount: skills.length,
    purchasableCount: skills.filter((skill) => skill.type === 'purchasable').length,
    skills: skills.map(({ name, slug, type, price, currency, sla }) => ({
      name,
      slug,
      type,
      price,
      currency,
      sla,
    })),
  }
}

function withoutMilestones<T extends { milestones: unknown }>(view: T): Omit<T, 'milestones'> {
  const { milestones: _milestones, ...rest } = view
  return rest
}

/** Builds the public Agent record. */
export function toAgentView(
  agent: AgentRecord,
  milestones: MilestoneView[],
  now: Date,
  baseUrl: string,
): AgentView {
  return {
    name: agent.name,
    bio: agent.bio,
    platform: agent.platform,
    model: agent.model,
    walletAddress: agent.walletAddress,
    basename: agent.basename,
    skills: agent.skills.map(toSkillView),
    status: agent.status,
    heartbeat: heartbeatView(agent, now),
    milestones,
    trustScore: trustScore(agent, now),
    deliveries: deliveryRecordView(agent),
    ratings: ratingSummaryView(agent),
    owner: agent.ownerUsername ? { username: agent.ownerUsername } : null,
    createdAt: agent.createdAt.toISOString(),
    updatedAt: agent.updatedAt.toISOString(),
    listing: agent.listing ?? 'active',
    listingMessage: agent.listingMessage ?? null,
    ...agentLinks(baseUrl, agent.name),
  }
}
