import { type AgentRecord, nameKey } from '../Agent.ts'
import type { FeedEventInput, FeedEventRecord } from '../Feed.ts'
import type { MilestoneRecord } from '../Milestone.ts'
import type { ListQuery, Store } from '../ports/Store.ts'
import { type UserRecord, usernameKey } from '../User.ts'

/** Options of the memory store (none yet; the object keeps the factory signature stable). */
export type MemoryStoreOptions = Record<string, never>

/** Lower-cases ASCII letters only, matching SQLite's `lower()` so every store searches alike. */
export function asciiLower(text: string): string {
  return text.replace(/[A-Z]/g, (letter) => letter.toLowerCase())
}

/** True when `q` is absent or a literal, case-insensitive substring of one of `fields`. */
function matchesQuery(q: string | undefined, ...fields: (string | null)[]): boolean {
  if (!q) return true
  const needle = asciiLower(q)
  return fields.some((field) => asciiLower(field ?? '').includes(needle))
}

function byKey(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** Agents by activity, newest first, then by name key: the order every store lists in. */
export function compareByActivity(a: AgentRecord, b: AgentRecord): number {
  return b.lastActiveAt.getTime() - a.lastActiveAt.getTime() || byKey(nameKey(a.name), nameKey(b.name))
}

function page<T>(items: T[], { offset, limit }: ListQuery): T[] {
  return items.slice(offset, offset + limit)
}

/**
 * An in-process Store for tests, demos and embedders without a database. Not durable.
 * @example const market = Marketplace.create({ store: memoryStore(), config: defaultConfig('http://localhost:3000') })
 */
export function memoryStore(_options: MemoryStoreOptions = {}): Store {
  const agents = new Map<string, AgentRecord>()
  const users = new Map<string, UserRecord>()
  const milestones: MilestoneRecord[] = []
  const events: FeedEventRecord[] = []

  const append = (inputs: FeedEventInput[]) => {
    for (const input of inputs) events.push(structuredClone({ ...input, id: String(events.length + 1) }))
  }
  const agentOf = (name: string) => agents.get(nameKey(name))
  const ownedCount = (username: string) =>
    [...agents.values()].filter(
      (agent) => agent.ownerUsername && usernameKey(agent.ownerUsername) === usernameKey(username),
    ).length

  return {
    async insertAgent(agent, newEvents) {
      const key = nameKey(agent.name)
      if (agents.has(key)) return 'name_taken'
      agents.set(key, structuredClone(agent))
      append(newEvents)
      return 'inserted'
    },
    async getAgent(name) {
      const agent = agentOf(name)
      return agent ? structuredClone(agent) : null
    },
    async findAgentNameByKeyHash(apiKeyHash) {
      for (const agent of agents.values()) if (agent.apiKeyHash === apiKeyHash) return agent.name
      return null
    },
    async updateAgent(name, patch, at, newEvents) {
      const agent = agentOf(name)
      if (!agent) return null
      Object.assign(agent, structuredClone(patch), {
        revision: agent.revision + 1,
        updatedAt: at,
        lastActiveAt: at,
      })
      append(newEvents)
      return structuredClone(agent)
    },
    async recordHeartbeat(name, at, online) {
      const agent = agentOf(name)
      if (!agent) return false
      if (!agent.lastSeen || agent.lastSeen < online.notSeenSince) append([online.event])
      agent.lastSeen = at
      agent.lastActiveAt = at
      return true
    },
    async listAgents(query) {
      const found = [...agents.values()]
        .filter((agent) => matchesQuery(query.q, agent.name, agent.bio))
        .sort(compareByActivity)
      return { agents: structuredClone(page(found, query)), total: found.length }
    },
    async listAgentsOwnedBy(username) {
      const key = usernameKey(username)
      const owned = [...agents.values()].filter(
        (agent) => agent.ownerUsername && usernameKey(agent.ownerUsername) === key,
      )
      return structuredClone(owned.sort(compareByActivity))
    },
    async insertMilestone(milestone, newEvents) {
      const agent = agentOf(milestone.agentName)
      if (!agent) throw new Error(`insertMilestone: no agent ${milestone.agentName}`)
      milestones.push(structuredClone(milestone))
      if (milestone.trust === 'verified') agent.verifiedMilestones += 1
      else agent.claimedMilestones += 1
      agent.lastActiveAt = milestone.createdAt
      append(newEvents)
    },
    async listMilestones(agentName, limit) {
      const key = nameKey(agentName)
      return milestones
        .map((milestone, order) => ({ milestone, order }))
        .filter(({ milestone }) => nameKey(milestone.agentName) === key)
        .sort((a, b) => byKey(b.milestone.date, a.milestone.date) || b.order - a.order)
        .slice(0, limit)
        .map(({ milestone }) => structuredClone(milestone))
    },
    async findAgentByPairingCodeHash(pairingCodeHash) {
      const agent = [...agents.values()].find((candidate) => candidate.pairingCodeHash === pairingCodeHash)
      return agent ? structuredClone(agent) : null
    },
    async claimAgent({ pairingCodeHash, newUser, at, event }) {
      const agent = [...agents.values()].find((candidate) => candidate.pairingCodeHash === pairingCodeHash)
      if (!agent) return { outcome: 'unknown_code' }
      if (agent.pairingCodeUsedAt) return { outcome: 'code_used' }
      const key = usernameKey(newUser.username)
      const existing = users.get(key)
      if (existing && existing.walletAddress !== newUser.walletAddress) return { outcome: 'wallet_mismatch' }
      const owner = existing ?? structuredClone(newUser)
      users.set(key, owner)
      agent.pairingCodeUsedAt = at
      agent.ownerUsername = owner.username
      append([event])
      return { outcome: 'claimed', agentName: agent.name }
    },
    async getUser(username) {
      const user = users.get(usernameKey(username))
      return user ? structuredClone(user) : null
    },
    async findUserByInviteCode(inviteCode) {
      const user = [...users.values()].find((candidate) => candidate.inviteCode === inviteCode)
      return user ? structuredClone(user) : null
    },
    async updateUser(username, patch, at) {
      const user = users.get(usernameKey(username))
      if (!user) return null
      Object.assign(user, structuredClone(patch), { updatedAt: at })
      return structuredClone(user)
    },
    async listUsers(query) {
      const found = [...users.values()]
        .filter((user) => matchesQuery(query.q, user.username, user.bio))
        .sort(
          (a, b) =>
            b.createdAt.getTime() - a.createdAt.getTime() ||
            byKey(usernameKey(a.username), usernameKey(b.username)),
        )
      const rows = page(found, query).map((user) => ({
        ...structuredClone(user),
        agentCount: ownedCount(user.username),
      }))
      return { users: rows, total: found.length }
    },
    async listEvents({ limit, after, before }) {
      let selected: FeedEventRecord[]
      if (after !== undefined)
        selected = events.filter((event) => Number(event.id) > Number(after)).slice(0, limit)
      else {
        const older =
          before === undefined ? events : events.filter((event) => Number(event.id) < Number(before))
        selected = older.slice(-limit)
      }
      return structuredClone(selected).reverse()
    },
    async ping() {},
    async close() {},
  }
}
