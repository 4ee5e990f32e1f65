import type { AgentPatch, AgentRecord, AgentStore, FeedEventInput, SellerSkill } from '@agentmarket/core'
import {
  byPosition,
  compareByActivity,
  nameKey,
  skillColumns,
  toAgentRecord,
  toAgentRow,
  toEventRow,
  toMilestoneRecord,
  toSkillRecord,
  toSkillRows,
  usernameKey,
} from '@agentmarket/core/rows'
import { agentListOrder, agentReads, skillsRead } from '@agentmarket/store-sql'
import { and, desc, eq, sql } from 'drizzle-orm'
import type { PostgresJsDatabase } from 'drizzle-orm/postgres-js'
import { agentListWhere } from './agentList.ts'
import { postgresExecutor } from './executor.ts'
import type { PostgresDatabase } from './open.ts'
import { agents, events, milestones, skills, tables } from './schema.ts'

/** A transaction or the pool: where a statement of a write runs. */
export type Writer = Pick<PostgresJsDatabase, 'insert' | 'update' | 'delete' | 'select' | 'execute'>

/** A drizzle query, as SQL text and parameters. */
type BuiltQuery = { toSQL(): { sql: string; params: unknown[] } }

/**
 * Runs `queries` in one transaction, sent together (postgres.js pipelines them): one round trip for all of them
 * instead of one each, for writes whose statements do not depend on each other's results.
 */
export async function inOneTrip({ sql }: PostgresDatabase, queries: BuiltQuery[]): Promise<void> {
  await sql.begin((tx) =>
    queries.map((query) => {
      const { sql: text, params } = query.toSQL()
      return tx.unsafe(text, params as never[], { prepare: true })
    }),
  )
}

/** The insert of feed events, or nothing for an empty list. */
export function eventInserts(writer: Writer, list: FeedEventInput[]): BuiltQuery[] {
  return list.length > 0 ? [writer.insert(events).values(list.map(toEventRow))] : []
}

/** The `index`th event of a keyed write as a statement of its WITH, landing only if the write's `counted` has a row. */
function eventFromCounted(event: FeedEventInput, index: number) {
  const row = toEventRow(event)
  return sql`, ${sql.raw(`event_${index}`)} as (
    insert into events (kind, agent, at, summary, data, task_id)
    select ${row.kind}, ${row.agent}, ${row.at}::bigint, ${row.summary}, ${row.data}, ${row.taskId}::text from counted
  )`
}

/** Inserts feed events (nothing for an empty list). */
export async function insertEvents(writer: Writer, list: FeedEventInput[]): Promise<void> {
  if (list.length > 0) await writer.insert(events).values(list.map(toEventRow))
}

/**
 * The agents, skills and milestones of the PostgreSQL Store. Each write is one transaction at READ COMMITTED: its
 * conditions are in its statements (a compare-and-set re-checks the row it locks), so racing nodes never lose an update.
 */
export function agentStore(database: PostgresDatabase): AgentStore {
  const { db } = database
  const x = postgresExecutor(database)
  const withSkills = skillsRead(x)
  // The reads of every request, built once: drizzle's builder costs several times the read (bench/CHANGES.md).
  const key = sql.placeholder('key')
  const agentByKey = db.select().from(agents).where(eq(agents.nameKey, key)).prepare('agent_by_key')
  const skillsOfAgent = db.select().from(skills).where(eq(skills.agentKey, key)).prepare('skills_of_agent')
  // An order's skill and what it needs of the seller in one round trip.
  const sellerSkillByKey = db
    .select({
      skill: skills,
      sellerName: agents.name,
      sellerWallet: agents.walletAddress,
      sellerListing: agents.listing,
    })
    .from(skills)
    .innerJoin(agents, eq(agents.nameKey, skills.agentKey))
    .where(and(eq(skills.agentKey, key), eq(skills.slug, sql.placeholder('slug'))))
    .prepare('seller_skill_by_key')
  const getSellerSkill = async (name: string, slug: string): Promise<SellerSkill | null> => {
    const [row] = await sellerSkillByKey.execute({ key: nameKey(name), slug })
    if (!row) return null
    const { skill, sellerName, sellerWallet, sellerListing } = row
    // Absent when active, as toAgentRecord leaves it.
    const seller = {
      name: sellerName,
      walletAddress: sellerWallet,
      ...(sellerListing !== 'active' && { listing: sellerListing }),
    } as SellerSkill['seller']
    return { seller, skill: toSkillRecord(skill) }
  }
  const getAgent = async (name: string): Promise<AgentRecord | null> => {
    const [row] = await agentByKey.execute({ key: nameKey(name) })
    return row ? toAgentRecord(row, byPosition(await skillsOfAgent.execute({ key: row.nameKey }))) : null
  }

  return {
    ...agentReads(x, withSkills),

    async insertAgent(agent, newEvents) {
      return db.transaction(async (tx) => {
        const inserted = await tx
          .insert(agents)
          .values(toAgentRow(agent))
          .onConflictDoNothing({ target: agents.nameKey })
          .returning({ key: agents.nameKey })
        if (inserted.length === 0) return 'name_taken'
        const skillRows = toSkillRows(nameKey(agent.name), agent.skills)
        if (skillRows.length > 0) await tx.insert(skills).values(skillRows)
        await insertEvents(tx, newEvents)
        return 'inserted'
      })
    },

    getAgent,

    getSellerSkill,

    async findAgentNameByKeyHash(apiKeyHash) {
      const [row] = await db
        .select({ name: agents.name })
        .from(agents)
        .where(eq(agents.apiKeyHash, apiKeyHash))
      return row?.name ?? null
    },

    async updateAgent(name, patch: AgentPatch, at, newEvents, apiKeyHash) {
      const key = nameKey(name)
      const { skills: newSkills, ...fields } = patch
      // A field left undefined is not changed, never written as null.
      const columns = Object.fromEntries(
        Object.entries({ ...fields, ...(newSkills === undefined ? {} : skillColumns(newSkills)) }).filter(
          ([, value]) => value !== undefined,
        ),
      )
      const time = at.getTime()
      const byKey = eq(agents.nameKey, key)
      // The answer is read in the write's own transaction: the row the update returns, then the skills as it leaves them.
      return db.transaction(async (tx) => {
        const [row] = await tx
          .update(agents)
          .set({
            ...columns,
            revision: sql`${agents.revision} + 1`,
            updatedAt: sql`greatest(${agents.updatedAt}, ${time}::bigint)`,
            lastActiveAt: sql`greatest(${agents.lastActiveAt}, ${time}::bigint)`,
          })
          .where(apiKeyHash === undefined ? byKey : and(byKey, eq(agents.apiKeyHash, apiKeyHash)))
          .returning()
        // No such agent, or not its key: nothing lands (its events would tell of a change that never was).
        if (!row) return null
        if (newSkills !== undefined) {
          await tx.delete(skills).where(eq(skills.agentKey, key))
          const skillRows = toSkillRows(key, newSkills)
          if (skillRows.length > 0) await tx.insert(skills).values(skillRows)
        }
        await insertEvents(tx, newEvents)
        return toAgentRecord(row, byPosition(await tx.select().from(skills).where(eq(skills.agentKey, key))))
      })
    },

    async recordHeartbeat(name, at, online, keyHash) {
      const key = nameKey(name)
      const hash = keyHash ?? null
      const time = at.getTime()
      const event = toEventRow(online.event)
      // One statement: the agent's row is locked and read as it was before the beat (its last heartbeat decides the
      // online event), then moved; the event lands only if the beat did. A rotated key stops the beat at once.
      const [result] = await db.execute<{ beat: number }>(sql`
        with before as (
          select last_seen from agents
          where name_key = ${key} and (${hash}::text is null or api_key_hash = ${hash}::text)
          for update
        ), beat as (
          update agents set last_seen = greatest(coalesce(last_seen, 0), ${time}::bigint),
            last_active_at = greatest(last_active_at, ${time}::bigint)
          where name_key = ${key} and exists (select 1 from before)
          returning 1
        ), online as (
          insert into events (kind, agent, at, summary, data)
          select ${event.kind}, ${event.agent}, ${event.at}::bigint, ${event.summary}, ${event.data}
          from before where last_seen is null or last_seen < ${online.notSeenSince.getTime()}::bigint
        )
        select count(*)::int as beat from beat`)
      return (result?.beat ?? 0) > 0
    },

    async rotateApiKey(name, fromHash, toHash) {
      const changed = await db
        .update(agents)
        .set({ apiKeyHash: toHash })
        .where(and(eq(agents.nameKey, nameKey(name)), eq(agents.apiKeyHash, fromHash)))
        .returning({ key: agents.nameKey })
      return changed.length === 1
    },

    async listAgents(query) {
      const where = agentListWhere(query)
      const total = await x.count({ from: 'agents', where })
      const rows = await x.rows({
        from: 'agents',
        where,
        orderBy: agentListOrder(x.sql, tables, query),
        limit: query.limit,
        offset: query.offset,
      })
      return { agents: await withSkills(rows), total }
    },

    async listAgentsOwnedBy(username) {
      const rows = await db
        .select()
        .from(agents)
        .where(eq(agents.ownerKey, usernameKey(username)))
      return (await withSkills(rows)).sort(compareByActivity)
    },

    async insertMilestone(milestone, newEvents, apiKeyHash) {
      const key = nameKey(milestone.agentName)
      const hash = apiKeyHash ?? null
      const at = milestone.createdAt.getTime()
      const counter = sql.raw(milestone.trust === 'verified' ? 'verified_milestones' : 'claimed_milestones')
      // One statement, one round trip: the counter's WHERE finds the agent and checks the key, and the milestone and its
      // events land only from the row it counted (a rotated key, or no such agent, lands nothing).
      const [result] = await db.execute<{ counted: number }>(sql`
        with counted as (
          update agents set ${counter} = ${counter} + 1, last_active_at = greatest(last_active_at, ${at}::bigint)
          where name_key = ${key} and (${hash}::text is null or api_key_hash = ${hash}::text)
          returning name_key
        ), milestone as (
          insert into milestones (id, agent_key, date, title, description, proof, trust, created_at)
          select ${milestone.id}, name_key, ${milestone.date}, ${milestone.title}, ${milestone.description}::text,
            ${milestone.proof}::text, ${milestone.trust}, ${at}::bigint
          from counted
        )${sql.join(newEvents.map(eventFromCounted))}
        select count(*)::int as counted from counted`)
      return (result?.counted ?? 0) > 0
    },

    async listMilestones(agentName, limit, offset = 0) {
      const key = nameKey(agentName)
      const rows = await db
        .select({ milestone: milestones, name: agents.name })
        .from(milestones)
        .innerJoin(agents, eq(agents.nameKey, milestones.agentKey))
        .where(eq(milestones.agentKey, key))
        .orderBy(desc(milestones.date), desc(milestones.seq))
        .limit(limit)
        .offset(offset)
      return rows.map((row) => toMilestoneRecord(row.milestone, row.name))
    },
  }
}
