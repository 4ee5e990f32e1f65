import { type AgentRecord, nameKey } from '../Agent.ts'
import type { MilestoneRecord } from '../Milestone.ts'
import type { AgentListQuery, Store } from '../ports/Store.ts'

/** Options of the memory store (none yet; the object keeps the factory signature stable). */
export type MemoryStoreOptions = Record<string, never>

/** Lower-cases ASCII letters only, matching SQLite's `lower()` so every store searches alike. */
export function asciiLower(text: string): string {
  return text.replace(/[A-Z]/g, (letter) => letter.toLowerCase())
}

function copyAgent(agent: AgentRecord): AgentRecord {
  return structuredClone(agent)
}

/** Agents by activity, newest first, then by name key: the order every store lists in. */
export function compareByActivity(a: AgentRecord, b: AgentRecord): number {
  const byActivity = b.lastActiveAt.getTime() - a.lastActiveAt.getTime()
  if (byActivity !== 0) return byActivity
  const keyA = nameKey(a.name)
  const keyB = nameKey(b.name)
  return keyA < keyB ? -1 : keyA > keyB ? 1 : 0
}

/**
 * An in-process Store for tests, demos and embedders without a database. Not durable.
 * @example const market = Marketplace.create({ store: memoryStore(), ... })
 */
export function memoryStore(_options: MemoryStoreOptions = {}): Store {
  const agents = new Map<string, AgentRecord>()
  const milestones: MilestoneRecord[] = []

  const matches = (agent: AgentRecord, q: string | undefined) => {
    if (!q) return true
    const needle = asciiLower(q)
    return asciiLower(agent.name).includes(needle) || asciiLower(agent.bio ?? '').includes(needle)
  }

  const touch = (name: string, change: (agent: AgentRecord) => void): AgentRecord | null => {
    const agent = agents.get(nameKey(name))
    if (!agent) return null
    change(agent)
    return copyAgent(agent)
  }

  return {
    async insertAgent(agent) {
      const key = nameKey(agent.name)
      if (agents.has(key)) return 'name_taken'
      agents.set(key, copyAgent(agent))
      return 'inserted'
    },
    async getAgent(name) {
      const agent = agents.get(nameKey(name))
      return agent ? copyAgent(agent) : null
    },
    async findAgentNameByKeyHash(apiKeyHash) {
      for (const agent of agents.values()) if (agent.apiKeyHash === apiKeyHash) return agent.name
      return null
    },
    async updateAgent(name, patch, at) {
      return touch(name, (agent) => {
        Object.assign(agent, structuredClone(patch))
        agent.revision += 1
        agent.updatedAt = at
        agent.lastActiveAt = at
      })
    },
    async recordHeartbeat(name, at) {
      const touched = touch(name, (agent) => {
        agent.lastSeen = at
        agent.lastActiveAt = at
      })
      return touched !== null
    },
    async listAgents({ q, limit, offset }: AgentListQuery) {
      const found = [...agents.values()].filter((agent) => matches(agent, q)).sort(compareByActivity)
      return { agents: found.slice(offset, offset + limit).map(copyAgent), total: found.length }
    },
    async insertMilestone(milestone) {
      const agent = agents.get(nameKey(milestone.agentName))
      if (!agent) throw new Error(`insertMilestone: no agent ${milestone.agentName}`)
      milestones.push(structuredClone(milestone))
      if (milestone.trust === 'verified') agent.verifiedMilestones += 1
      else agent.claimedMilestones += 1
      agent.lastActiveAt = milestone.createdAt
    },
    async listMilestones(agentName, limit) {
      const key = nameKey(agentName)
      return milestones
        .map((milestone, order) => ({ milestone, order }))
        .filter(({ milestone }) => nameKey(milestone.agentName) === key)
        .sort((a, b) =>
          a.milestone.date === b.milestone.date
            ? b.order - a.order
            : a.milestone.date < b.milestone.date
              ? 1
              : -1,
        )
        .slice(0, limit)
        .map(({ milestone }) => structuredClone(milestone))
    },
    async ping() {},
    async close() {},
  }
}
