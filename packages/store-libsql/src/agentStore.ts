import type {
  AgentPatch,
  AgentRecord,
  AgentStore,
  FeedEventInput,
  OnlineEvent,
  SellerSkill,
} from '@agentmarket/core'
import {
  type AgentRow,
  byPosition,
  compareByActivity,
  type MilestoneRow,
  nameKey,
  type SkillRow,
  skillColumns,
  skillsByAgent,
  toAgentRecord,
  toAgentRow,
  toEventRow,
  toMilestoneRecord,
  toSkillRecord,
  toSkillRows,
  usernameKey,
} from '@agentmarket/core/rows'
import { agentListOrder, agentReads, skillsRead, type WithSkills } from '@agentmarket/store-sql'
import { and, desc, eq, inArray, sql } from 'drizzle-orm'
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core'
import { agentListCount, agentListWhere, WALK_IN_ORDER_FROM } from './agentList.ts'
import type { RunInfo } from './connection.ts'
import { sqliteExecutor } from './executor.ts'
import { groupCommit } from './groupCommit.ts'
import type { Database } from './open.ts'
import { agents, milestones, skills, tables } from './schema.ts'
import type { SearchIndexer } from './searchIndex.ts'
import { named, shapedRead } from './shapedReads.ts'
import { batchWriter, preparedOnce } from './writes.ts'

// Time columns are written as max(coalesce(column, 0), at): a write that waited for the lock (another process held it)
// must not move "last seen" or "last active" back past a later write already acknowledged.

// A heartbeat's two statements, fixed text so the connection prepares them once. A key hash of null checks no key.
const ONLINE_EVENT_IF_DUE = `insert into events (kind, agent, at, summary, data) select ?, ?, ?, ?, ?
  where exists (select 1 from agents where name_key = ? and (? is null or api_key_hash = ?)
    and (last_seen is null or last_seen < ?))`
const HEARTBEAT_TIMES = `update agents set last_seen = max(coalesce(last_seen, 0), ?),
  last_active_at = max(coalesce(last_active_at, 0), ?) where name_key = ? and (? is null or api_key_hash = ?)`

// A milestone counted on its agent, which it also marks active, only while the key it was sent with (if any) is the
// agent's: fixed text bound by position, prepared once (drizzle's placeholder filling cost more than the update).
const milestoneCounted = (column: string) => `update agents set ${column} = ${column} + 1,
  last_active_at = max(coalesce(last_active_at, 0), ?) where name_key = ? and (? is null or api_key_hash = ?)`
const MILESTONE_COUNTED = {
  verified: milestoneCounted('verified_milestones'),
  claimed: milestoneCounted('claimed_milestones'),
}

// The name keys of a batch of registrations already taken: its keys as one JSON array, each looked up by its index.
const NAMES_TAKEN = 'select name_key from agents where name_key in (select value from json_each(?))'

/** A skill's row with what an order needs of its seller (getSellerSkill). */
type SellerSkillRow = SkillRow & { sellerName: string; sellerWallet: string | null; sellerListing: string }

/** The values of an update's columns under the names its prepared statement binds them by (`set_<column>`). */
const placeholderValues = (columns: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(columns).map(([column, value]) => [`set_${column}`, value]))

/** What a write step that read its rows (an update's `returning`) tells its batch. */
const ONE_ROW: RunInfo = { changes: 1, lastInsertRowid: 0 }

/** Thrown inside a write batch whose agent is gone (or not its key), so the batch lands nothing; never leaves the store. */
const NO_SUCH_AGENT = new Error('no such agent')

/**
 * Agent rows with their skills: one agent's by a statement prepared once (the read of every agent page), several
 * agents' by one read.
 */
export function skillsReader(database: Database) {
  const { db, connection } = database
  // Unordered: the primary key (agent_key, slug) finds them, and sorting a few rows here beats SQLite's temporary
  // sort tree (10 µs against 2 µs a read).
  const skillsOfAgentQuery = shapedRead<SkillRow>(
    connection,
    db
      .select(named(skills))
      .from(skills)
      .where(eq(skills.agentKey, sql.placeholder('key'))),
  )
  const skillsOfAgent = { all: (values: { key: string }) => byPosition(skillsOfAgentQuery.all(values)) }
  const several = skillsRead(sqliteExecutor(database))
  const withSkills: WithSkills = async (rows) => {
    if (rows.length === 1 && rows[0])
      return [toAgentRecord(rows[0], skillsOfAgent.all({ key: rows[0].nameKey }))]
    return several(rows)
  }
  return { skillsOfAgent, withSkills }
}

/**
 * The agents, skills and milestones of the libSQL Store. Multi-statement writes run as one `BEGIN IMMEDIATE` batch:
 * all of it lands or none of it, and writers in other processes wait on the database lock instead of failing.
 */
export function agentStore(database: Database, searchIndex: SearchIndexer): AgentStore {
  const { db, connection } = database
  const { writeBatch, writeNow, runAll, insert, insertEvents } = batchWriter(database)
  const x = sqliteExecutor(database)
  const { skillsOfAgent, withSkills } = skillsReader(database)

  // The point reads of every request, built and prepared once: drizzle's builder costs far more than the read.
  const key = sql.placeholder('key')
  const agentByKey = shapedRead<AgentRow>(
    connection,
    db.select(named(agents)).from(agents).where(eq(agents.nameKey, key)),
  )
  // An order's skill and its seller in one statement: the skill by its primary key, the seller's three columns each by
  // a subquery on the agent's (a join of the two cost twice the two reads here; bench/CHANGES.md, issue 41).
  const sellerColumn = (column: SQLiteColumn, as: string) =>
    sql`(select ${column} from ${agents} where ${agents.nameKey} = ${key})`.as(as)
  const sellerSkillByKey = shapedRead<SellerSkillRow>(
    connection,
    db
      .select({
        ...named(skills),
        sellerName: sellerColumn(agents.name, 'sellerName'),
        sellerWallet: sellerColumn(agents.walletAddress, 'sellerWallet'),
        sellerListing: sellerColumn(agents.listing, 'sellerListing'),
      })
      .from(skills)
      .where(and(eq(skills.agentKey, key), eq(skills.slug, sql.placeholder('slug')))),
  )
  const agentNameByKey = db
    .select({ name: agents.name })
    .from(agents)
    .where(eq(agents.nameKey, key))
    .prepare()
  const agentNameByKeyHash = db
    .select({ name: agents.name })
    .from(agents)
    .where(eq(agents.apiKeyHash, key))
    .prepare()
  const milestonesOfAgent = shapedRead<MilestoneRow>(
    connection,
    db
      .select(named(milestones))
      .from(milestones)
      .where(eq(milestones.agentKey, key))
      .orderBy(desc(milestones.date), desc(milestones.seq))
      .limit(sql.placeholder('limit'))
      .offset(sql.placeholder('offset')),
  )

  // An agent's update, prepared once per set of columns it changes (and whether it checks the key): its revision moves,
  // its times no earlier than a later write already made them, and it answers the row as it left it.
  const agentUpdates = preparedOnce<ReturnType<typeof buildAgentUpdate>>()
  const buildAgentUpdate = (columns: string[], keyed: boolean) =>
    shapedRead<AgentRow>(
      connection,
      db
        .update(agents)
        .set({
          ...Object.fromEntries(columns.map((column) => [column, sql.placeholder(`set_${column}`)])),
          revision: sql`${agents.revision} + 1`,
          updatedAt: sql`max(coalesce(${agents.updatedAt}, 0), ${sql.placeholder('at')})`,
          lastActiveAt: sql`max(coalesce(${agents.lastActiveAt}, 0), ${sql.placeholder('at')})`,
        })
        .where(
          keyed
            ? and(eq(agents.nameKey, key), eq(agents.apiKeyHash, sql.placeholder('hash')))
            : eq(agents.nameKey, key),
        )
        .returning(named(agents)),
    )
  const agentUpdate = (columns: string[], keyed: boolean) =>
    agentUpdates(`${keyed}:${columns.join(',')}`, () => buildAgentUpdate(columns, keyed))
  const skillsDelete = db.delete(skills).where(eq(skills.agentKey, key)).prepare()

  // A user's profile: the agents it owns, then their skills in one prepared read whatever their number. Neither sorts
  // nor joins in SQLite: its temporary sort tree and this join cost 10-15 µs a read against 3-5 µs (bench/CHANGES.md).
  const agentsOfOwner = shapedRead<AgentRow>(
    connection,
    db.select(named(agents)).from(agents).where(eq(agents.ownerKey, key)),
  )
  const skillsOfOwner = shapedRead<SkillRow>(
    connection,
    db
      .select(named(skills))
      .from(skills)
      .where(
        inArray(
          skills.agentKey,
          db.select({ key: agents.nameKey }).from(agents).where(eq(agents.ownerKey, key)),
        ),
      ),
  )

  const getAgent = async (name: string): Promise<AgentRecord | null> => {
    const row = agentByKey.get({ key: nameKey(name) })
    return row ? toAgentRecord(row, skillsOfAgent.all({ key: row.nameKey })) : null
  }

  const getSellerSkill = async (name: string, slug: string): Promise<SellerSkill | null> => {
    const row = sellerSkillByKey.get({ key: nameKey(name), slug })
    if (!row) return null
    const { sellerName, sellerWallet, sellerListing } = row
    // Absent when active, as toAgentRecord leaves it.
    const seller = {
      name: sellerName,
      walletAddress: sellerWallet,
      ...(sellerListing !== 'active' && { listing: sellerListing }),
    } as SellerSkill['seller']
    return { seller, skill: toSkillRecord(row) }
  }

  /** Heartbeats of many agents in one transaction: per agent and key, its `online` event if due, then its times. */
  type Beat = { key: string; at: Date; online: OnlineEvent; keyHash: string | undefined }
  const heartbeats = groupCommit(async (items: Beat[]) => {
    // Per agent only its first heartbeat of the batch can be its first in five minutes, and its latest sets the times.
    // Heartbeats sent with different keys stay apart: each is recorded only if its key is the agent's.
    const sender = (item: Beat) => `${item.key}\n${item.keyHash ?? ''}`
    const perSender = new Map<string, Beat & { newest: number }>()
    for (const item of items) {
      const seen = perSender.get(sender(item))
      if (seen) seen.newest = Math.max(seen.newest, item.at.getTime())
      else perSender.set(sender(item), { ...item, newest: item.at.getTime() })
    }
    const steps = [...perSender.values()].flatMap(({ key, online, newest: at, keyHash }) => {
      const event = toEventRow(online.event)
      const hash = keyHash ?? null
      return [
        () =>
          connection.run(ONLINE_EVENT_IF_DUE, [
            event.kind,
            event.agent,
            event.at,
            event.summary,
            event.data,
            key,
            hash,
            hash,
            online.notSeenSince.getTime(),
          ]),
        () => connection.run(HEARTBEAT_TIMES, [at, at, key, hash, hash]),
      ]
    })
    const results = await writeNow(steps)
    const found = new Map(
      [...perSender.keys()].map((name, index) => [name, (results[2 * index + 1]?.changes ?? 0) > 0]),
    )
    return items.map((item) => found.get(sender(item)) ?? false)
  })

  /**
   * Registrations of many agents in one write transaction: the names already taken (or taken earlier in the batch)
   * are answered `name_taken`, the others inserted with their skills and events.
   */
  const registrations = groupCommit(async (items: { agent: AgentRecord; events: FeedEventInput[] }[]) => {
    const outcomes = await connection.writeTransaction(() => {
      const keys = [...new Set(items.map(({ agent }) => nameKey(agent.name)))]
      // One fixed text whatever the batch's size, prepared once: drizzle built and prepared one per batch.
      const existing = connection.values(NAMES_TAKEN, [JSON.stringify(keys)])
      const taken = new Set(existing.map((row) => row[0]))
      const outcomes = items.map(({ agent }) => {
        const key = nameKey(agent.name)
        if (taken.has(key)) return 'name_taken' as const
        taken.add(key)
        return 'inserted' as const
      })
      // Each row by a statement prepared once: cheaper than building one multi-row insert per table each time.
      const inserted = items.filter((_, index) => outcomes[index] === 'inserted')
      runAll(
        inserted.flatMap(({ agent, events: newEvents }) => [
          insert(agents, toAgentRow(agent)),
          ...toSkillRows(nameKey(agent.name), agent.skills).map((row) => insert(skills, row)),
          ...insertEvents(newEvents),
        ]),
      )
      return outcomes
    })
    // The new agents are the search index's tail (searchIndex.ts) until a pass indexes them.
    searchIndex.added(outcomes.filter((outcome) => outcome === 'inserted').length)
    return outcomes
  })

  return {
    ...agentReads(x, withSkills),

    insertAgent: (agent, newEvents) => registrations({ agent, events: newEvents }),

    getAgent,

    getSellerSkill,

    async findAgentNameByKeyHash(apiKeyHash) {
      return agentNameByKeyHash.get({ key: apiKeyHash })?.name ?? null
    },

    async updateAgent(name, patch: AgentPatch, at, newEvents, apiKeyHash) {
      const key = nameKey(name)
      const { skills: newSkills, ...fields } = patch
      // A field left undefined is not changed (as drizzle's set() reads it), never written as null.
      const columns = Object.fromEntries(
        Object.entries({ ...fields, ...(newSkills === undefined ? {} : skillColumns(newSkills)) }).filter(
          ([, value]) => value !== undefined,
        ),
      )
      // The answer is read in the write's own transaction: the row the update returns, then the skills as it leaves them.
      let written: AgentRecord | null = null
      let row: AgentRow | undefined
      const batch = writeBatch([
        () => {
          row = agentUpdate(Object.keys(columns), apiKeyHash !== undefined).get({
            ...placeholderValues(columns),
            key,
            at: at.getTime(),
            hash: apiKeyHash,
          })
          // No such agent (or not its key): nothing of this batch may land (its events would tell of a change that never was).
          if (!row) throw NO_SUCH_AGENT
          return ONE_ROW
        },
        ...(newSkills === undefined
          ? []
          : [
              () => skillsDelete.run({ key }) as RunInfo,
              ...toSkillRows(key, newSkills).map((skill) => insert(skills, skill)),
            ]),
        () => {
          if (row) written = toAgentRecord(row, skillsOfAgent.all({ key }))
          return ONE_ROW
        },
        ...insertEvents(newEvents),
      ])
      try {
        await batch
      } catch (error) {
        if (error === NO_SUCH_AGENT) return null
        throw error
      }
      return written
    },

    recordHeartbeat: (name, at, online, keyHash) => heartbeats({ key: nameKey(name), at, online, keyHash }),

    async rotateApiKey(name, fromHash, toHash) {
      const [result] = await writeBatch([
        db
          .update(agents)
          .set({ apiKeyHash: toHash })
          .where(and(eq(agents.nameKey, nameKey(name)), eq(agents.apiKeyHash, fromHash))),
      ])
      return (result?.changes ?? 0) === 1
    },

    async listAgents(query) {
      const counted = await x.first<{ total: number }>(sql`select ${agentListCount(query)} as total`)
      const total = Number(counted?.total ?? 0)
      const rows = await x.rows({
        from: 'agents',
        where: agentListWhere(query, total >= WALK_IN_ORDER_FROM),
        orderBy: agentListOrder(x.sql, tables, query),
        limit: query.limit,
        offset: query.offset,
      })
      return { agents: await withSkills(rows), total }
    },

    async listAgentsOwnedBy(username) {
      const owner = usernameKey(username)
      const rows = agentsOfOwner.all({ key: owner })
      // Most users own one agent or none: its skills by their own key, else all of them in one read.
      const only = rows.length === 1 ? rows[0] : undefined
      if (only) return [toAgentRecord(only, skillsOfAgent.all({ key: only.nameKey }))]
      const grouped = rows.length === 0 ? new Map() : skillsByAgent(skillsOfOwner.all({ key: owner }))
      return rows.map((row) => toAgentRecord(row, grouped.get(row.nameKey) ?? [])).sort(compareByActivity)
    },

    async insertMilestone(milestone, newEvents, apiKeyHash) {
      const key = nameKey(milestone.agentName)
      const at = milestone.createdAt.getTime()
      const hash = apiKeyHash ?? null
      // The counter first: its WHERE finds the agent and checks the key, and a refusal undoes the whole batch.
      const batch = writeBatch([
        () => {
          const counted = connection.run(MILESTONE_COUNTED[milestone.trust], [at, key, hash, hash])
          if (counted.changes === 0) throw NO_SUCH_AGENT
          return counted
        },
        insert(milestones, {
          id: milestone.id,
          agentKey: key,
          date: milestone.date,
          title: milestone.title,
          description: milestone.description,
          proof: milestone.proof,
          trust: milestone.trust,
          createdAt: at,
        }),
        ...insertEvents(newEvents),
      ])
      try {
        await batch
        return true
      } catch (error) {
        if (error === NO_SUCH_AGENT) return false
        throw error
      }
    },

    async listMilestones(agentName, limit, offset = 0) {
      const key = nameKey(agentName)
      const rows = milestonesOfAgent.all({ key, limit, offset })
      // The agent's name as registered, read only when there is a milestone to carry it (an unknown agent has none).
      const name = rows.length === 0 ? agentName : (agentNameByKey.get({ key })?.name ?? agentName)
      return rows.map((row) => toMilestoneRecord(row, name))
    },
  }
}
