import type { AgentPatch, AgentRecord } from '../Agent.ts'
import type { FeedEventInput, FeedEventRecord } from '../Feed.ts'
import type { MilestoneRecord } from '../Milestone.ts'
import type { UserRecord } from '../User.ts'

/** A page of a list filtered by a literal, case-insensitive substring `q`. */
export type ListQuery = { q?: string; limit: number; offset: number }
/** Query of the agent list: `q` matches name or bio. */
export type AgentListQuery = ListQuery
/** Query of the user list: `q` matches username or bio. */
export type UserListQuery = ListQuery
/** Query of the feed: newest first; `after`/`before` are event ids. */
export type FeedListQuery = { limit: number; after?: string; before?: string }

/** A pairing to apply atomically: spend the code, create the user if new, bind the agent. */
export type AgentClaim = {
  pairingCodeHash: string
  /** Used only when no user has this username yet. */
  newUser: UserRecord
  at: Date
  /** Appended only if the claim succeeds. */
  event: FeedEventInput
}

/** The outcome of a claim. */
export type ClaimResult =
  | { outcome: 'claimed'; agentName: string }
  | { outcome: 'unknown_code' | 'code_used' | 'wallet_mismatch' }

/** An `agent.online` event to append only if the agent was not live (last seen before `notSeenSince`). */
export type OnlineEvent = { event: FeedEventInput; notSeenSince: Date }

/** Persistence of the marketplace. Every method is atomic on its own, events included. */
export type Store = {
  /** Inserts a new agent and its events unless the name is taken in any case. Of two racing inserts one wins. */
  insertAgent(agent: AgentRecord, events: FeedEventInput[]): Promise<'inserted' | 'name_taken'>
  /** The agent of that name, looked up without regard to case. */
  getAgent(name: string): Promise<AgentRecord | null>
  /** The name of the agent whose API key hashes to `apiKeyHash`, if any. */
  findAgentNameByKeyHash(apiKeyHash: string): Promise<string | null>
  /** Applies the patch (absent fields unchanged), bumps `revision`, sets `updatedAt` and `lastActiveAt`, appends events. */
  updateAgent(
    name: string,
    patch: AgentPatch,
    at: Date,
    events: FeedEventInput[],
  ): Promise<AgentRecord | null>
  /** Records a heartbeat (`lastSeen` and `lastActiveAt` = `at`), appending `online` if it applies. False: no such agent. */
  recordHeartbeat(name: string, at: Date, online: OnlineEvent): Promise<boolean>
  /** Agents most recently active first, then by name; with the total matching `q` (name or bio). */
  listAgents(query: AgentListQuery): Promise<{ agents: AgentRecord[]; total: number }>
  /** Agents owned by a user, most recently active first. */
  listAgentsOwnedBy(username: string): Promise<AgentRecord[]>
  /** Inserts a milestone, counts it on its agent, marks the agent active and appends events, in one transaction. */
  insertMilestone(milestone: MilestoneRecord, events: FeedEventInput[]): Promise<void>
  /** An agent's milestones, newest `date` first, then most recently recorded first. */
  listMilestones(agentName: string, limit: number): Promise<MilestoneRecord[]>
  /** The agent whose pairing code hashes to `pairingCodeHash`, used or not. */
  findAgentByPairingCodeHash(pairingCodeHash: string): Promise<AgentRecord | null>
  /** Spends a pairing code: one of racing claims of a code wins, the others see `code_used`. */
  claimAgent(claim: AgentClaim): Promise<ClaimResult>
  /** The user of that username, looked up without regard to case. */
  getUser(username: string): Promise<UserRecord | null>
  /** The user whose invite code this is. */
  findUserByInviteCode(inviteCode: string): Promise<UserRecord | null>
  /** Applies a profile patch and sets `updatedAt`. */
  updateUser(
    username: string,
    patch: Partial<Pick<UserRecord, 'bio' | 'showcase'>>,
    at: Date,
  ): Promise<UserRecord | null>
  /** Users newest first, then by username; each with the number of agents it owns. */
  listUsers(query: UserListQuery): Promise<{ users: (UserRecord & { agentCount: number })[]; total: number }>
  /** Feed events newest first. With `after`: the `limit` events right after that id. With `before`: right before it. */
  listEvents(query: FeedListQuery): Promise<FeedEventRecord[]>
  /** Resolves when the store can be read; rejects otherwise. */
  ping(): Promise<void>
  /** Releases connections. */
  close(): Promise<void>
}
