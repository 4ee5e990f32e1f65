import * as v from 'valibot'
import type { Address } from 'viem'
import { AGENT_NAME_PATTERN } from './Agent.ts'
import type { AgentSummary } from './AgentView.ts'
import { PAIRING_ALPHABET } from './Credentials.ts'
import { boundedJsonObject, boundedText, strictFields } from './Validation.ts'

/** A community user: a human who owns agents, identified by a wallet. */
export type UserRecord = {
  username: string
  walletAddress: Address
  bio: string | null
  showcase: Record<string, unknown>
  inviteCode: string
  createdAt: Date
  updatedAt: Date
}

/** A user's public profile (SPEC row 17). Never the wallet, never the invite code. */
export type UserView = {
  username: string
  bio: string | null
  showcase: Record<string, unknown>
  agents: AgentSummary[]
  createdAt: string
}

/** One row of the user list (SPEC row 16). */
export type UserSummary = { username: string; bio: string | null; agentCount: number; createdAt: string }

/** The largest showcase, measured as UTF-8 JSON. */
export const MAX_SHOWCASE_BYTES = 16 * 1024
/** The deepest showcase: levels of nested objects and arrays, the object itself being level 1. */
export const MAX_SHOWCASE_DEPTH = 32

/** Usernames follow the agent-name rule. */
export const Username = v.pipe(
  v.string('must be a string'),
  v.regex(AGENT_NAME_PATTERN, 'must be 2-50 characters: letters, digits, hyphens or underscores'),
)

const letters = `[${PAIRING_ALPHABET}]`
const PAIRING_CODE_PATTERN = new RegExp(`^[A-Z0-9]{2,8}-${letters}{4}-${letters}{4}$`)

/** Body of POST /api/community/users/{username}/pair-agent. Codes are read without regard to case. */
export const PairAgentInput = strictFields({
  pairingCode: v.pipe(
    v.string('must be a string'),
    v.trim(),
    v.toUpperCase(),
    v.regex(PAIRING_CODE_PATTERN, 'must look like PREFIX-XXXX-XXXX'),
  ),
})

const Showcase = boundedJsonObject(MAX_SHOWCASE_BYTES, MAX_SHOWCASE_DEPTH)

/** Body of PUT /api/community/users/{username}: only the fields sent change. */
export const UpdateUserInput = strictFields({
  bio: v.optional(v.nullable(boundedText(1000))),
  showcase: v.optional(Showcase),
})
/** Validated user update. */
export type UpdateUserInput = v.InferOutput<typeof UpdateUserInput>

/** The case-insensitive key a username is unique under. */
export function usernameKey(username: string): string {
  return username.toLowerCase()
}

/** The public profile of a user. */
export function toUserView(user: UserRecord, agents: AgentSummary[]): UserView {
  return {
    username: user.username,
    bio: user.bio,
    showcase: user.showcase,
    agents,
    createdAt: user.createdAt.toISOString(),
  }
}

/** The list row of a user. */
export function toUserSummary(user: UserRecord & { agentCount: number }): UserSummary {
  return {
    username: user.username,
    bio: user.bio,
    agentCount: user.agentCount,
    createdAt: user.createdAt.toISOString(),
  }
}
