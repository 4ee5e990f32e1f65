import { type AgentRecord, type AgentStore, IDLE_WINDOW_MS, LIVE_WINDOW_MS } from '@agentmarket/core'
import {
  type AgentRow,
  livenessChangesAt,
  type SkillRow,
  skillsByAgent,
  toAgentRecord,
} from '@agentmarket/core/rows'
import { and, asc, desc, eq, gt, gte, inArray, isNotNull, or, sql } from 'drizzle-orm'
import type { Executor } from './executor.ts'

/** Agent rows with their skills, each agent's in its order. */
export type WithSkills = (rows: AgentRow[]) => Promise<AgentRecord[]>

/** Agent rows with their skills, by one read of the skills (none for no rows). */
export function skillsRead(x: Executor): WithSkills {
  const { skills } = x.tables
  return async (rows) => {
    if (rows.length === 0) return []
    const keys = rows.map((row) => row.nameKey)
    const grouped = skillsByAgent<SkillRow>(
      await x.rows({ from: 'skills', where: inArray(skills.agentKey, keys) }),
    )
    return rows.map((row) => toAgentRecord(row, grouped.get(row.nameKey) ?? []))
  }
}

/** The agent reads both stores run alike. */
type SharedAgentMethods = Pick<
  AgentStore,
  'syncAgents' | 'nextLivenessChange' | 'listPaidOffers' | 'findSkillSellers'
>

/**
 * The agent reads both stores run alike, over a store's executor; `withSkills` reads the agents' skills (a store may
 * read one agent's by a statement of its own).
 * @example const reads = agentReads(postgresExecutor(database), skillsRead(x))
 */
export function agentReads(x: Executor, withSkills: WithSkills): SharedAgentMethods {
  const { agents, skills } = x.tables
  return {
    async syncAgents({ after, since, limit }) {
      const rows = await x.rows({
        from: 'agents',
        where: and(
          after === null ? undefined : gt(agents.nameKey, after),
          since === null ? undefined : gte(agents.updatedAt, since.getTime()),
        ),
        orderBy: [asc(agents.nameKey)],
        limit,
      })
      return withSkills(rows)
    },

    async nextLivenessChange(now) {
      // Each liveness changes first for its earliest heartbeat (three index seeks); a heartbeat in the future (another
      // process's clock) changes at its own instant.
      const time = now.getTime()
      const earliest = (from: number, to: number) =>
        sql`(select min(${agents.lastSeen}) from ${agents} where ${agents.lastSeen} >= ${x.sql.long(from)} and ${agents.lastSeen} <= ${x.sql.long(to)})`
      const row = await x.first<{ idle: unknown; live: unknown; future: unknown }>(
        sql`select ${earliest(time - IDLE_WINDOW_MS, time - LIVE_WINDOW_MS - 1)} as idle,
          ${earliest(time - LIVE_WINDOW_MS, time)} as live,
          ${earliest(time + 1, Number.MAX_SAFE_INTEGER)} as future`,
      )
      const instants = [row?.idle, row?.live, row?.future].map((seen) =>
        seen === null || seen === undefined
          ? Number.POSITIVE_INFINITY
          : livenessChangesAt(new Date(Number(seen)), now),
      )
      return Math.min(...instants)
    },

    async listPaidOffers(after, limit) {
      // Keyset paging on the skills primary key (agent_key, slug), through the partial index of purchasable skills.
      const rows = await x.select(
        {
          agentKey: skills.agentKey,
          agent: agents.name,
          slug: skills.slug,
          name: skills.name,
          description: skills.description,
          price: skills.priceBaseUnits,
          inputSchema: skills.inputSchema,
        },
        {
          from: 'skills',
          join: { table: 'agents', on: eq(agents.nameKey, skills.agentKey) },
          where: and(
            eq(skills.type, 'purchasable'),
            sql`${skills.priceBaseUnits} > 0`,
            isNotNull(agents.walletAddress),
            // A withdrawn listing takes no orders, so offers none.
            sql`${agents.listing} <> 'deleted'`,
            after
              ? sql`(${skills.agentKey}, ${skills.slug}) > (${after.agentKey}, ${after.slug})`
              : undefined,
          ),
          orderBy: [asc(skills.agentKey), asc(skills.slug)],
          limit,
        },
      )
      return rows.map(({ price, inputSchema, ...offer }) => ({
        ...offer,
        amountBaseUnits: BigInt(price ?? 0),
        input: inputSchema === null ? null : (JSON.parse(inputSchema) as Record<string, unknown>),
      }))
    },

    async findSkillSellers(nameOrSlug, limit) {
      const wanted = nameOrSlug.trim().toLowerCase()
      const selling = sql`(select ${skills.agentKey} from ${skills} where ${or(eq(skills.slug, wanted), eq(skills.nameKey, wanted))})`
      const rows = await x.rows({
        from: 'agents',
        // A withdrawn listing takes no orders, by mail neither.
        where: and(sql`${agents.nameKey} in ${selling}`, sql`${agents.listing} <> 'deleted'`),
        orderBy: [desc(agents.lastActiveAt), asc(agents.nameKey)],
        limit,
      })
      return withSkills(rows)
    },
  }
}
