import type {
  AgentListQuery,
  AgentPatch,
  AgentRecord,
  MilestoneRecord,
  SkillRecord,
  Store,
} from '@agentmarket/core'
import { nameKey } from '@agentmarket/core'
import { asc, desc, eq, inArray, type SQL, sql } from 'drizzle-orm'
import type { Address } from 'viem'
import type { Database } from './open.ts'
import { agents, milestones, skills } from './schema.ts'

type AgentRow = typeof agents.$inferSelect
type SkillRow = typeof skills.$inferSelect
type MilestoneRow = typeof milestones.$inferSelect

const toDate = (ms: number) => new Date(ms)

function toSkillRecord(row: SkillRow): SkillRecord {
  return {
    name: row.name,
    slug: row.slug,
    description: row.description,
    type: row.type as SkillRecord['type'],
    priceBaseUnits: row.priceBaseUnits === null ? null : BigInt(row.priceBaseUnits),
    currency: 'USDC',
    sla: row.sla,
    url: row.url,
  }
}

function toSkillRows(agentKey: string, list: readonly SkillRecord[]) {
  return list.map((skill, position) => ({
    agentKey,
    position,
    slug: skill.slug,
    name: skill.name,
    description: skill.description,
    type: skill.type,
    // Prices are capped far below 2^53 base units, so the integer column holds them exactly.
    priceBaseUnits: skill.priceBaseUnits === null ? null : Number(skill.priceBaseUnits),
    currency: skill.currency,
    sla: skill.sla,
    url: skill.url,
  }))
}

function toAgentRecord(row: AgentRow, skillRows: SkillRow[]): AgentRecord {
  return {
    name: row.name,
    bio: row.bio,
    platform: row.platform as AgentRecord['platform'],
    model: row.model,
    walletAddress: row.walletAddress as Address | null,
    basename: row.basename,
    skills: skillRows.map(toSkillRecord),
    status: 'free',
    apiKeyHash: row.apiKeyHash,
    pairingCodeHash: row.pairingCodeHash,
    ownerUsername: row.ownerUsername,
    lastSeen: row.lastSeen === null ? null : toDate(row.lastSeen),
    lastActiveAt: toDate(row.lastActiveAt),
    createdAt: toDate(row.createdAt),
    updatedAt: toDate(row.updatedAt),
    revision: row.revision,
    verifiedMilestones: row.verifiedMilestones,
    claimedMilestones: row.claimedMilestones,
  }
}

function toAgentRow(agent: AgentRecord): typeof agents.$inferInsert {
  return {
    nameKey: nameKey(agent.name),
    name: agent.name,
    bio: agent.bio,
    platform: agent.platform,
    model: agent.model,
    walletAddress: agent.walletAddress,
    basename: agent.basename,
    status: agent.status,
    apiKeyHash: agent.apiKeyHash,
    pairingCodeHash: agent.pairingCodeHash,
    ownerUsername: agent.ownerUsername,
    lastSeen: agent.lastSeen?.getTime() ?? null,
    lastActiveAt: agent.lastActiveAt.getTime(),
    createdAt: agent.createdAt.getTime(),
    updatedAt: agent.updatedAt.getTime(),
    revision: agent.revision,
    verifiedMilestones: agent.verifiedMilestones,
    claimedMilestones: agent.claimedMilestones,
  }
}

function toMilestoneRecord(row: MilestoneRow, agentName: string): MilestoneRecord {
  return {
    id: row.id,
    agentName,
    date: row.date,
    title: row.title,
    description: row.description,
    proof: row.proof,
    trust: row.trust as MilestoneRecord['trust'],
    createdAt: toDate(row.createdAt),
  }
}

/** True when `error`, or any error it wraps, is a uniqueness failure of `column` (e.g. `agents.name_key`). */
function isUniqueViolation(error: unknown, column: string): boolean {
  for (let current = error; current instanceof Error; current = current.cause) {
    if (/UNIQUE constraint failed|PRIMARY KEY/i.test(current.message) && current.message.includes(column))
      return true
  }
  return false
}

/** Literal, case-insensitive substring match of name or bio: instr() treats % and _ as themselves. */
function searchCondition(q: string | undefined): SQL | undefined {
  if (!q) return undefined
  return sql`(instr(lower(${agents.name}), lower(${q})) > 0 or instr(lower(coalesce(${agents.bio}, '')), lower(${q})) > 0)`
}

/**
 * The Store over libSQL with drizzle. Multi-statement writes go through one `batch`, which libSQL runs
 * as a single transaction on one connection: all of it lands or none of it.
 * @example const store = libsqlStore(await openDatabase('file:./data/market.db'))
 */
export function libsqlStore(database: Database): Store {
  const { db } = database

  const skillsByAgent = async (keys: string[]): Promise<Map<string, SkillRow[]>> => {
    const grouped = new Map<string, SkillRow[]>(keys.map((key) => [key, []]))
    if (keys.length === 0) return grouped
    const rows = await db
      .select()
      .from(skills)
      .where(inArray(skills.agentKey, keys))
      .orderBy(asc(skills.agentKey), asc(skills.position))
    for (const row of rows) grouped.get(row.agentKey)?.push(row)
    return grouped
  }

  const getAgent = async (name: string): Promise<AgentRecord | null> => {
    const key = nameKey(name)
    const [row] = await db.select().from(agents).where(eq(agents.nameKey, key))
    if (!row) return null
    const skillRows = await db
      .select()
      .from(skills)
      .where(eq(skills.agentKey, key))
      .orderBy(asc(skills.position))
    return toAgentRecord(row, skillRows)
  }

  return {
    async insertAgent(agent) {
      const row = toAgentRow(agent)
      const skillRows = toSkillRows(row.nameKey, agent.skills)
      try {
        await db.batch([
          db.insert(agents).values(row),
          ...skillRows.map((skill) => db.insert(skills).values(skill)),
        ])
        return 'inserted'
      } catch (error) {
        if (isUniqueViolation(error, 'agents.name_key')) return 'name_taken'
        throw error
      }
    },

    getAgent,

    async findAgentNameByKeyHash(apiKeyHash) {
      const [row] = await db
        .select({ name: agents.name })
        .from(agents)
        .where(eq(agents.apiKeyHash, apiKeyHash))
      return row?.name ?? null
    },

    async updateAgent(name, patch: AgentPatch, at) {
      const key = nameKey(name)
      const { skills: newSkills, ...fields } = patch
      const update = db
        .update(agents)
        .set({
          ...fields,
          revision: sql`${agents.revision} + 1`,
          updatedAt: at.getTime(),
          lastActiveAt: at.getTime(),
        })
        .where(eq(agents.nameKey, key))
        .returning({ nameKey: agents.nameKey })
      if (newSkills === undefined) {
        if ((await update).length === 0) return null
      } else {
        if (!(await db.select({ k: agents.nameKey }).from(agents).where(eq(agents.nameKey, key))).length)
          return null
        await db.batch([
          update,
          db.delete(skills).where(eq(skills.agentKey, key)),
          ...toSkillRows(key, newSkills).map((skill) => db.insert(skills).values(skill)),
        ])
      }
      return getAgent(key)
    },

    async recordHeartbeat(name, at) {
      const changed = await db
        .update(agents)
        .set({ lastSeen: at.getTime(), lastActiveAt: at.getTime() })
        .where(eq(agents.nameKey, nameKey(name)))
        .returning({ nameKey: agents.nameKey })
      return changed.length > 0
    },

    async listAgents({ q, limit, offset }: AgentListQuery) {
      const where = searchCondition(q)
      const [counted] = await db.select({ total: sql<number>`count(*)` }).from(agents).where(where)
      const rows = await db
        .select()
        .from(agents)
        .where(where)
        .orderBy(desc(agents.lastActiveAt), asc(agents.nameKey))
        .limit(limit)
        .offset(offset)
      const grouped = await skillsByAgent(rows.map((row) => row.nameKey))
      return {
        agents: rows.map((row) => toAgentRecord(row, grouped.get(row.nameKey) ?? [])),
        total: counted?.total ?? 0,
      }
    },

    async insertMilestone(milestone) {
      const key = nameKey(milestone.agentName)
      const counter = milestone.trust === 'verified' ? agents.verifiedMilestones : agents.claimedMilestones
      const counterField = milestone.trust === 'verified' ? 'verifiedMilestones' : 'claimedMilestones'
      await db.batch([
        db.insert(milestones).values({
          id: milestone.id,
          agentKey: key,
          date: milestone.date,
          title: milestone.title,
          description: milestone.description,
          proof: milestone.proof,
          trust: milestone.trust,
          createdAt: milestone.createdAt.getTime(),
        }),
        db
          .update(agents)
          .set({ [counterField]: sql`${counter} + 1`, lastActiveAt: milestone.createdAt.getTime() })
          .where(eq(agents.nameKey, key)),
      ])
    },

    async listMilestones(agentName, limit) {
      const key = nameKey(agentName)
      const [owner] = await db.select({ name: agents.name }).from(agents).where(eq(agents.nameKey, key))
      if (!owner) return []
      const rows = await db
        .select()
        .from(milestones)
        .where(eq(milestones.agentKey, key))
        .orderBy(desc(milestones.date), desc(milestones.seq))
        .limit(limit)
      return rows.map((row) => toMilestoneRecord(row, owner.name))
    },

    async ping() {
      await db.select({ one: sql`1` }).from(agents).limit(1)
    },

    async close() {
      database.close()
    },
  }
}
