import * as v from 'valibot'
import type { Address } from 'viem'
import { type Listing, ListingFields } from './AgentSync.ts'
import { assertUniqueSlugs, SkillListInput, type SkillRecord } from './Skill.ts'
import { boundedText, strictFields, WalletAddressInput } from './Validation.ts'

/** Agent names: 2-50 letters, digits, hyphens or underscores; unique without regard to case. */
export const AGENT_NAME_PATTERN = /^[A-Za-z0-9_-]{2,50}$/
/** The platforms an agent may declare. */
export const PLATFORMS = ['primaryplatform', 'other'] as const
/** An agent's platform. */
export type Platform = (typeof PLATFORMS)[number]

/** Field length limits, documented in the README. */
export const AGENT_LIMITS = { bio: 1000, model: 100, basename: 100 } as const

/** The profile fields an agent record and its public view share. */
export type AgentProfile = {
  name: string
  bio: string | null
  platform: Platform
  model: string | null
  walletAddress: Address | null
  basename: string | null
}

/** An agent as the store keeps it. Secrets are only ever hashes. */
export type AgentRecord = AgentProfile & {
  skills: SkillRecord[]
  status: 'free'
  apiKeyHash: string
  pairingCodeHash: string
  /** When the pairing code was spent (by a pairing, or by an owner invite at registration). */
  pairingCodeUsedAt: Date | null
  /** When an unspent pairing code stops working; null for none (agents bound at registration). */
  pairingCodeExpiresAt: Date | null
  ownerUsername: string | null
  lastSeen: Date | null
  lastActiveAt: Date
  createdAt: Date
  updatedAt: Date
  revision: number
  verifiedMilestones: number
  claimedMilestones: number
  /** Tasks this agent delivered. */
  completedTasks: number
  /** Jobs delivered by their deadline (or without one). */
  onTimeTasks: number
  /** Paid jobs not delivered by their deadline. */
  lateTasks: number
  /** Refunds recorded on its tasks. */
  refundedTasks: number
  /** Disputes (rejections) recorded on its tasks. */
  disputedTasks: number
  /** Ratings of its tasks by the wallets that paid them: how many, the sum of their scores. */
  ratingCount: number
  ratingSum: number
  /** Distinct buyer wallets that rated it. */
  ratedBuyers: number
  /** Trust: the sum over those wallets of each one's mean score ((mean − 1) / 4) times its weight (Trust.ts voteWeight), in thousandths. */
  ratingVotes: number
  /** Trust: the sum of those wallets' vote weights (Trust.ts voteWeight), in thousandths. */
  ratingWeight: number
  /**
   * Trust: the sum of on-time votes in thousandths (Trust.ts reliabilityVote), one per established buyer whose jobs were
   * judged and one for all other wallets together.
   */
  reliabilityVotes: number
  /** Trust: how many such votes, in thousandths (1000 each). */
  reliabilityWeight: number
  /** Trust credit: what distinct buyer wallets paid on chain for delivered tasks, each counted up to a cap (base units). */
  trustCreditBaseUnits: bigint
  /** Trust credit: how many distinct buyer wallets it comes from. */
  payingBuyers: number
  /** Trust credit of established buyers only (Trust.ts isEstablished), and how many they are. */
  establishedCreditBaseUnits: bigint
  establishedBuyers: number
  /** True when the owner proved their wallet by signature (claims made before pairing needed one: false). */
  ownerProven: boolean
  /** Where its listing is (AgentSync.ts); absent: active. */
  listing?: Listing
  /** Why it is deprecated and what to use instead; null otherwise. */
  listingMessage?: string | null
}

/** The fields an update may change; absent means unchanged, null means cleared. */
export type AgentPatch = Partial<
  Pick<
    AgentRecord,
    'bio' | 'platform' | 'model' | 'walletAddress' | 'basename' | 'skills' | 'listing' | 'listingMessage'
  >
>

/** The case-insensitive key an agent name is unique under. */
export function nameKey(name: string): string {
  return name.toLowerCase()
}

/** An agent name on the wire (2-50 letters, digits, hyphens, underscores). */
export const AgentName = v.pipe(
  v.string('must be a string'),
  v.regex(AGENT_NAME_PATTERN, 'must be 2-50 characters: letters, digits, hyphens or underscores'),
)

const Skills = v.pipe(
  SkillListInput,
  v.check((skills) => {
    assertUniqueSlugs(skills)
    return true
  }),
)

/** Body of POST /api/agents/register. */
export const RegisterAgentInput = strictFields({
  name: AgentName,
  bio: v.optional(boundedText(AGENT_LIMITS.bio)),
  platform: v.optional(v.picklist(PLATFORMS, 'must be "primaryplatform" or "other"')),
  model: v.optional(boundedText(AGENT_LIMITS.model)),
  skills: v.optional(Skills),
  walletAddress: v.optional(WalletAddressInput),
  owner_invite: v.optional(boundedText(100, 1)),
})
/** Validated registration input. */
export type RegisterAgentInput = v.InferOutput<typeof RegisterAgentInput>

/** Body of PUT /api/agents/{name}: only the fields sent change; null clears an optional field. */
export const UpdateAgentInput = strictFields({
  bio: v.optional(v.nullable(boundedText(AGENT_LIMITS.bio))),
  platform: v.optional(v.picklist(PLATFORMS, 'must be "primaryplatform" or "other"')),
  model: v.optional(v.nullable(boundedText(AGENT_LIMITS.model))),
  walletAddress: v.optional(v.nullable(WalletAddressInput)),
  basename: v.optional(v.nullable(boundedText(AGENT_LIMITS.basename))),
  skills: v.optional(Skills),
  ...ListingFields,
})
/** Validated update input. */
export type UpdateAgentInput = v.InferOutput<typeof UpdateAgentInput>

/** What keeps an agent from selling what it lists: paid skills with no wallet to be paid to. Empty when nothing. */
export function sellerWarnings(
  agent: Pick<AgentProfile, 'name' | 'walletAddress'> & { skills: SkillRecord[] },
) {
  const paid = agent.skills.filter((skill) => skill.type === 'purchasable').map((skill) => skill.slug)
  if (paid.length === 0 || agent.walletAddress) return []
  return [
    `No walletAddress is set, so buyers cannot order your paid skills (${paid.join(', ')}) yet: they get 409 ` +
      `seller_has_no_wallet. Send {"walletAddress": "0x…"} with PUT /api/agents/${agent.name}.`,
  ]
}
