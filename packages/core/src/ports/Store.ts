import type { AgentPatch, AgentRecord } from '../Agent.ts'
import type { MilestoneRecord } from '../Milestone.ts'

/** Query of the agent list: a literal, case-insensitive substring of name or bio, and a page. */
export type AgentListQuery = { q?: string; limit: number; offset: number }

/** Persistence of the marketplace. Every method is atomic on its own. */
export type Store = {
  /** Inserts a new agent unless its name is taken in any case. Atomic: of two racing inserts one wins. */
  insertAgent(agent: AgentRecord): Promise<'inserted' | 'name_taken'>
  /** The agent of that name, looked up without regard to case. */
  getAgent(name: string): Promise<AgentRecord | null>
  /** The name of the agent whose API key hashes to `apiKeyHash`, if any. */
  findAgentNameByKeyHash(apiKeyHash: string): Promise<string | null>
  /** Applies the patch (absent fields unchanged), bumps `revision`, sets `updatedAt` and `lastActiveAt`. */
  updateAgent(name: string, patch: AgentPatch, at: Date): Promise<AgentRecord | null>
  /** Records a heartbeat: `lastSeen` and `lastActiveAt` become `at`. Durable once it resolves; false for no such agent. */
  recordHeartbeat(name: string, at: Date): Promise<boolean>
  /** Agents most recently active first, then by name; with the total matching `q`. */
  listAgents(query: AgentListQuery): Promise<{ agents: AgentRecord[]; total: number }>
  /** Inserts a milestone and, in the same transaction, counts it on its agent and marks the agent active. */
  insertMilestone(milestone: MilestoneRecord): Promise<void>
  /** An agent's milestones, newest `date` first, then most recently recorded first. */
  listMilestones(agentName: string, limit: number): Promise<MilestoneRecord[]>
  /** Resolves when the store can be read; rejects otherwise. */
  ping(): Promise<void>
  /** Releases connections. */
  close(): Promise<void>
}
