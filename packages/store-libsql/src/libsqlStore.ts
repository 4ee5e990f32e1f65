import type {
  AgentListQuery,
  AgentPatch,
  AgentRecord,
  FeedEventInput,
  OnlineEvent,
  Store,
  UserRecord,
} from '@agentmarket/core'
import { IDLE_WINDOW_MS, LIVE_WINDOW_MS } from '@agentmarket/core'
import {
  type AgentRow,
  byPosition,
  compareByActivity,
  livenessChangesAt,
  type MilestoneRow,
  nameKey,
  type SkillRow,
  skillColumns,
  skillsByAgent,
  toAgentRecord,
  toAgentRow,
  toEventRecord,
  toEventRow,
  toMilestoneRecord,
  toSkillRows,
  toUserRecord,
  type UserRow,
  usernameKey,
} from '@agentmarket/core/rows'
import { and, asc, desc, eq, gt, gte, inArray, isNotNull, lt, or, sql } from 'drizzle-orm'
import {
  agentListCount,
  agentListOrder,
  agentListWhere,
  searchCondition,
  WALK_IN_ORDER_FROM,
} from './agentList.ts'
import { withChangeVersion } from './changeVersion.ts'
import { type RunInfo, toStatement } from './connection.ts'
import { groupCommit } from './groupCommit.ts'
import { kvStore } from './kvStore.ts'
import { mailStore } from './mailStore.ts'
import type { Database } from './open.ts'
import { agents, events, milestones, skills, users } from './schema.ts'
import { named, shapedRead } from './shapedReads.ts'
import { taskStore } from './taskStore.ts'
import { webhookStore } from './webhookStore.ts'
import { batchWriter, preparedOnce } from './writes.ts'

// Time columns are written as max(coalesce(column, 0), at): a write that waited for the lock (another process held it)
// must not move "last seen" or "last active" back past a later write already acknowledged.

// A heartbeat's two statements, fixed text so the connection prepares them once. A key hash of null checks no key.
const ONLINE_EVENT_IF_DUE = `insert into events (kind, agent, at, summary, data) select ?, ?, ?, ?, ?
  where exists (select 1 from agents where name_key = ? and (? is null or api_key_hash = ?)
    and (last_seen is null or last_seen < ?))`
const HEARTBEAT_TIMES = `update agents set last_seen = max(coalesce(last_seen, 0), ?),
  last_active_at = max(coalesce(last_active_at, 0), ?) where name_key = ? and (? is null or api_key_hash = ?)`

/** The values of an update's columns under the names its prepared statement binds them by (`set_<column>`). */
const placeholderValues = (columns: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(columns).map(([column, value]) => [`set_${column}`, value]))

/** Thrown inside a write batch whose agent is gone, so the batch lands nothing; never leaves the store. */
const NO_SUCH_AGENT = new Error('no such agent')

/**
 * The Store over libSQL with drizzle. Multi-statement writes run as one `BEGIN IMMEDIATE` batch: all of it
 * lands or none of it, and writers in other processes wait on the database lock instead of failing.
 * @example const store = libsqlStore(await openDatabase('file:./data/market.db'))
 */
export function libsqlStore(database: Database): Store {
  const { db, connection } = database
  const { writeBatch, writeNow, runAll, insert, insertEvents } = batchWriter(database)

  // The point reads of every request, built and prepared once: drizzle's builder costs far more than the read.
  const key = sql.placeholder('key')
  const agentByKey = shapedRead<AgentRow>(
    connection,
    db.select(named(agents)).from(agents).where(eq(agents.nameKey, key)),
  )
  // Unordered: the primary key (agent_key, slug) finds them, and sorting a few rows here beats SQLite's temporary
  // sort tree (10 µs against 2 µs a read).
  const skillsOfAgentQuery = shapedRead<SkillRow>(
    connection,
    db.select(named(skills)).from(skills).where(eq(skills.agentKey, key)),
  )
  const skillsOfAgent = { all: (values: { key: string }) => byPosition(skillsOfAgentQuery.all(values)) }
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
  const userByKey = shapedRead<UserRow>(
    connection,
    db.select(named(users)).from(users).where(eq(users.nameKey, key)),
  )
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

  // A milestone counted on its agent, which it also marks active (no earlier than a later write already made it).
  const milestoneCounter = (counter: 'verifiedMilestones' | 'claimedMilestones') =>
    db
      .update(agents)
      .set({
        [counter]: sql`${agents[counter]} + 1`,
        lastActiveAt: sql`max(coalesce(${agents.lastActiveAt}, 0), ${sql.placeholder('at')})`,
      })
      .where(eq(agents.nameKey, key))
      .prepare()
  const countMilestone = {
    verified: milestoneCounter('verifiedMilestones'),
    claimed: milestoneCounter('claimedMilestones'),
  }

  // An agent's update, prepared once per set of columns it changes: its revision moves, and its times no earlier than a
  // later write already made them.
  const agentUpdates = preparedOnce<ReturnType<typeof buildAgentUpdate>>()
  const buildAgentUpdate = (columns: string[]) =>
    db
      .update(agents)
      .set({
        ...Object.fromEntries(columns.map((column) => [column, sql.placeholder(`set_${column}`)])),
        revision: sql`${agents.revision} + 1`,
        updatedAt: sql`max(coalesce(${agents.updatedAt}, 0), ${sql.placeholder('at')})`,
        lastActiveAt: sql`max(coalesce(${agents.lastActiveAt}, 0), ${sql.placeholder('at')})`,
      })
      .where(eq(agents.nameKey, key))
      .prepare()
  const agentUpdate = (columns: string[]) => agentUpdates(columns.join(','), () => buildAgentUpdate(columns))
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

  const withSkills = async (rows: AgentRow[]): Promise<AgentRecord[]> => {
    if (rows.length === 0) return []
    if (rows.length === 1 && rows[0])
      return [toAgentRecord(rows[0], skillsOfAgent.all({ key: rows[0].nameKey }))]
    const keys = rows.map((row) => row.nameKey)
    const grouped = skillsByAgent(await db.select().from(skills).where(inArray(skills.agentKey, keys)))
    return rows.map((row) => toAgentRecord(row, grouped.get(row.nameKey) ?? []))
  }

  const getAgent = async (name: string): Promise<AgentRecord | null> => {
    const row = agentByKey.get({ key: nameKey(name) })
    return row ? toAgentRecord(row, skillsOfAgent.all({ key: row.nameKey })) : null
  }

  const getUser = async (username: string): Promise<UserRecord | null> => {
    const row = userByKey.get({ key: usernameKey(username) })
    return row ? toUserRecord(row) : null
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
  const registrations = groupCommit(async (items: { agent: AgentRecord; events: FeedEventInput[] }[]) =>
    connection.writeTransaction(() => {
      const keys = [...new Set(items.map(({ agent }) => nameKey(agent.name)))]
      const existing = db
        .select({ key: agents.nameKey })
        .from(agents)
        .where(inArray(agents.nameKey, keys))
        .all()
      const taken = new Set(existing.map((row) => row.key))
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
    }),
  )

  const store: Store = {
    ...taskStore(database),
    ...kvStore(database),
    ...mailStore(database),
    ...webhookStore(database),

    insertAgent: (agent, newEvents) => registrations({ agent, events: newEvents }),

    getAgent,

    async findAgentNameByKeyHash(apiKeyHash) {
      return agentNameByKeyHash.get({ key: apiKeyHash })?.name ?? null
    },

    async updateAgent(name, patch: AgentPatch, at, newEvents) {
      const key = nameKey(name)
      const { skills: newSkills, ...fields } = patch
      // A field left undefined is not changed (as drizzle's set() reads it), never written as null.
      const columns = Object.fromEntries(
        Object.entries({ ...fields, ...(newSkills === undefined ? {} : skillColumns(newSkills)) }).filter(
          ([, value]) => value !== undefined,
        ),
      )
      const batch = writeBatch([
        () => {
          const changed = agentUpdate(Object.keys(columns)).run({
            ...placeholderValues(columns),
            key,
            at: at.getTime(),
          }) as RunInfo
          // No such agent: nothing of this batch may land (its events would tell of a change that never was).
          if (changed.changes === 0) throw NO_SUCH_AGENT
          return changed
        },
        ...(newSkills === undefined
          ? []
          : [
              () => skillsDelete.run({ key }) as RunInfo,
              ...toSkillRows(key, newSkills).map((skill) => insert(skills, skill)),
            ]),
        ...insertEvents(newEvents),
      ])
      try {
        await batch
      } catch (error) {
        if (error === NO_SUCH_AGENT) return null
        throw error
      }
      return getAgent(key)
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

    async listAgents(query: AgentListQuery) {
      const counted = toStatement(sql`select ${agentListCount(query)} as total`)
      const total = Number(connection.get(counted.sql, counted.args)?.total ?? 0)
      const rows = await db
        .select()
        .from(agents)
        .where(agentListWhere(query, total >= WALK_IN_ORDER_FROM))
        .orderBy(...agentListOrder(query))
        .limit(query.limit)
        .offset(query.offset)
      return { agents: await withSkills(rows), total }
    },

    async syncAgents({ after, since, limit }) {
      const rows = await db
        .select()
        .from(agents)
        .where(
          and(
            after === null ? undefined : gt(agents.nameKey, after),
            since === null ? undefined : gte(agents.updatedAt, since.getTime()),
          ),
        )
        .orderBy(asc(agents.nameKey))
        .limit(limit)
      return withSkills(rows)
    },

    async nextLivenessChange(now) {
      // Each liveness changes first for its earliest heartbeat (three index seeks); a heartbeat in the future (another
      // process's clock) changes at its own instant.
      const earliest = (from: number, to: number) =>
        sql`(select min(${agents.lastSeen}) from ${agents} where ${agents.lastSeen} >= ${from} and ${agents.lastSeen} <= ${to})`
      const time = now.getTime()
      const [row] = await db
        .select({
          idle: earliest(time - IDLE_WINDOW_MS, time - LIVE_WINDOW_MS - 1),
          live: earliest(time - LIVE_WINDOW_MS, time),
          future: earliest(time + 1, Number.MAX_SAFE_INTEGER),
        })
        .from(sql`(select 1)`)
      const instants = [row?.idle, row?.live, row?.future].map((seen) =>
        seen === null || seen === undefined
          ? Number.POSITIVE_INFINITY
          : livenessChangesAt(new Date(Number(seen)), now),
      )
      return Math.min(...instants)
    },

    async listPaidOffers(after, limit) {
      // Keyset paging on the skills primary key (agent_key, slug), through the partial index of purchasable skills.
      const rows = await db
        .select({
          agentKey: skills.agentKey,
          agent: agents.name,
          slug: skills.slug,
          name: skills.name,
          description: skills.description,
          price: skills.priceBaseUnits,
          inputSchema: skills.inputSchema,
        })
        .from(skills)
        .innerJoin(agents, eq(agents.nameKey, skills.agentKey))
        .where(
          and(
            eq(skills.type, 'purchasable'),
            sql`${skills.priceBaseUnits} > 0`,
            isNotNull(agents.walletAddress),
            // A withdrawn listing takes no orders, so offers none.
            sql`${agents.listing} <> 'deleted'`,
            after
              ? sql`(${skills.agentKey}, ${skills.slug}) > (${after.agentKey}, ${after.slug})`
              : undefined,
          ),
        )
        .orderBy(asc(skills.agentKey), asc(skills.slug))
        .limit(limit)
      return rows.map(({ price, inputSchema, ...offer }) => ({
        ...offer,
        amountBaseUnits: BigInt(price ?? 0),
        input: inputSchema === null ? null : (JSON.parse(inputSchema) as Record<string, unknown>),
      }))
    },

    async findSkillSellers(nameOrSlug, limit) {
      const wanted = nameOrSlug.trim().toLowerCase()
      const selling = db
        .select({ agentKey: skills.agentKey })
        .from(skills)
        .where(or(eq(skills.slug, wanted), eq(skills.nameKey, wanted)))
      const rows = await db
        .select()
        .from(agents)
        // A withdrawn listing takes no orders, by mail neither.
        .where(and(inArray(agents.nameKey, selling), sql`${agents.listing} <> 'deleted'`))
        .orderBy(desc(agents.lastActiveAt), asc(agents.nameKey))
        .limit(limit)
      return withSkills(rows)
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

    async insertMilestone(milestone, newEvents) {
      const key = nameKey(milestone.agentName)
      const at = milestone.createdAt.getTime()
      await writeBatch([
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
        () => countMilestone[milestone.trust].run({ key, at }) as RunInfo,
        ...insertEvents(newEvents),
      ])
    },

    async listMilestones(agentName, limit, offset = 0) {
      const key = nameKey(agentName)
      const rows = milestonesOfAgent.all({ key, limit, offset })
      // The agent's name as registered, read only when there is a milestone to carry it (an unknown agent has none).
      const name = rows.length === 0 ? agentName : (agentNameByKey.get({ key })?.name ?? agentName)
      return rows.map((row) => toMilestoneRecord(row, name))
    },

    async findAgentByPairingCodeHash(pairingCodeHash) {
      const [row] = await db.select().from(agents).where(eq(agents.pairingCodeHash, pairingCodeHash))
      return row ? ((await withSkills([row]))[0] ?? null) : null
    },

    async claimAgent({ pairingCodeHash, newUser, at, event }) {
      const key = usernameKey(newUser.username)
      const unspent = sql`exists (select 1 from ${agents} where ${agents.pairingCodeHash} = ${pairingCodeHash}
        and ${agents.pairingCodeUsedAt} is null)`
      const row = toEventRow(event)
      // One IMMEDIATE transaction: create the user only if the code is unspent and the name is free, bind the
      // agent only if that user has the claimer's wallet, and log the event only if the bind happened.
      const [, bind] = await writeBatch([
        sql`insert into ${users} (name_key, username, wallet_address, bio, showcase, invite_code, created_at, updated_at)
            select ${key}, ${newUser.username}, ${newUser.walletAddress}, ${newUser.bio}, ${JSON.stringify(newUser.showcase)},
              ${newUser.inviteCode}, ${newUser.createdAt.getTime()}, ${newUser.updatedAt.getTime()}
            where ${unspent} and not exists (select 1 from ${users} where ${users.nameKey} = ${key})`,
        sql`update ${agents} set
              owner_username = (select ${users.username} from ${users} where ${users.nameKey} = ${key}),
              owner_key = ${key}, pairing_code_used_at = ${at.getTime()}, owner_proven = 1,
              updated_at = max(updated_at, ${at.getTime()})
            where ${agents.pairingCodeHash} = ${pairingCodeHash} and ${agents.pairingCodeUsedAt} is null
              and exists (select 1 from ${users} where ${users.nameKey} = ${key}
                and ${users.walletAddress} = ${newUser.walletAddress})`,
        sql`insert into ${events} (kind, agent, at, summary, data)
            select ${row.kind}, ${row.agent}, ${row.at}, ${row.summary}, ${row.data} where changes() = 1`,
      ])
      const target = await db
        .select({ name: agents.name, usedAt: agents.pairingCodeUsedAt })
        .from(agents)
        .where(eq(agents.pairingCodeHash, pairingCodeHash))
      const agent = target[0]
      if ((bind?.changes ?? 0) === 1 && agent) return { outcome: 'claimed', agentName: agent.name }
      if (!agent) return { outcome: 'unknown_code' }
      // Not bound: either someone spent the code first, or the username belongs to another wallet.
      const owner = await getUser(key)
      return owner && owner.walletAddress !== newUser.walletAddress && agent.usedAt === null
        ? { outcome: 'wallet_mismatch' }
        : { outcome: 'code_used' }
    },

    async setPairingCode(agentName, pairingCodeHash, expiresAt) {
      const [result] = await writeBatch([
        sql`update ${agents} set pairing_code_hash = ${pairingCodeHash}, pairing_code_expires_at = ${expiresAt.getTime()}
            where ${agents.nameKey} = ${nameKey(agentName)} and ${agents.pairingCodeUsedAt} is null`,
      ])
      return (result?.changes ?? 0) === 1
    },

    getUser,

    async findUserByInviteCode(inviteCode) {
      const [row] = await db.select().from(users).where(eq(users.inviteCode, inviteCode))
      return row ? toUserRecord(row) : null
    },

    async updateUser(username, patch, at) {
      const key = usernameKey(username)
      const { showcase, ...fields } = patch
      const changed = await db
        .update(users)
        .set({
          ...fields,
          ...(showcase === undefined ? {} : { showcase: JSON.stringify(showcase) }),
          updatedAt: at.getTime(),
        })
        .where(eq(users.nameKey, key))
        .returning()
      return changed[0] ? toUserRecord(changed[0]) : null
    },

    async listUsers({ q, limit, offset }) {
      const where = searchCondition(q, users.username, users.bio)
      const [counted] = await db.select({ total: sql<number>`count(*)` }).from(users).where(where)
      const rows = await db
        .select({
          user: users,
          // Qualified by hand: drizzle renders the outer column unqualified, which the subquery would rebind.
          agentCount: sql<number>`(select count(*) from "agents" as "owned" where "owned"."owner_key" = "users"."name_key")`,
        })
        .from(users)
        .where(where)
        .orderBy(desc(users.createdAt), asc(users.nameKey))
        .limit(limit)
        .offset(offset)
      return {
        users: rows.map((row) => ({ ...toUserRecord(row.user), agentCount: row.agentCount })),
        total: counted?.total ?? 0,
      }
    },

    async listEvents({ limit, after, before }) {
      if (after !== undefined) {
        const rows = await db
          .select()
          .from(events)
          .where(gt(events.seq, Number(after)))
          .orderBy(asc(events.seq))
          .limit(limit)
        return rows.reverse().map(toEventRecord)
      }
      const where = before === undefined ? undefined : lt(events.seq, Number(before))
      const rows = await db.select().from(events).where(where).orderBy(desc(events.seq)).limit(limit)
      return rows.map(toEventRecord)
    },

    async ping() {
      // Fixed text, prepared once: health checks poll this.
      connection.values('select 1 from agents limit 1')
    },

    async close() {
      database.close()
    },
  }
  return withChangeVersion(store, connection)
}
