import type { Store, UserRecord } from '@agentmarket/core'
import {
  nameKey,
  toEventRecord,
  toEventRow,
  toUserRecord,
  toUserRow,
  usernameKey,
} from '@agentmarket/core/rows'
import { asc, desc, eq, gt, isNotNull, lt, sql } from 'drizzle-orm'
import { searchCondition } from './agentList.ts'
import { withSkills } from './agentStore.ts'
import type { PostgresDatabase } from './open.ts'
import { agents, events, users } from './schema.ts'

type UserMethods = Pick<
  Store,
  | 'findAgentByPairingCodeHash'
  | 'claimAgent'
  | 'setPairingCode'
  | 'getUser'
  | 'findUserByInviteCode'
  | 'updateUser'
  | 'listUsers'
  | 'listEvents'
>

/** Users, pairing codes and their claims, and the feed's reads, of the PostgreSQL Store. */
export function userStore({ db }: PostgresDatabase): UserMethods {
  const getUser = async (username: string): Promise<UserRecord | null> => {
    const [row] = await db
      .select()
      .from(users)
      .where(eq(users.nameKey, usernameKey(username)))
    return row ? toUserRecord(row) : null
  }

  return {
    async findAgentByPairingCodeHash(pairingCodeHash) {
      const [row] = await db.select().from(agents).where(eq(agents.pairingCodeHash, pairingCodeHash))
      return row ? ((await withSkills(db, [row]))[0] ?? null) : null
    },

    async claimAgent({ pairingCodeHash, newUser, at, event }) {
      const key = usernameKey(newUser.username)
      return db.transaction(async (tx) => {
        // The agent's row is locked first: of racing claims of one code, the later ones wait and then see it spent.
        const [agent] = await tx
          .select({ name: agents.name, usedAt: agents.pairingCodeUsedAt })
          .from(agents)
          .where(eq(agents.pairingCodeHash, pairingCodeHash))
          .for('update')
        if (!agent) return { outcome: 'unknown_code' as const }
        if (agent.usedAt !== null) return { outcome: 'code_used' as const }
        // The user is made only now (the code is unspent), unless the name is someone's already.
        await tx.insert(users).values(toUserRow(newUser)).onConflictDoNothing({ target: users.nameKey })
        const [owner] = await tx
          .select({ username: users.username, wallet: users.walletAddress })
          .from(users)
          .where(eq(users.nameKey, key))
        if (!owner || owner.wallet !== newUser.walletAddress) return { outcome: 'wallet_mismatch' as const }
        await tx
          .update(agents)
          .set({
            ownerUsername: owner.username,
            ownerKey: key,
            pairingCodeUsedAt: at.getTime(),
            ownerProven: 1,
            // An owner change is a change sync reports.
            updatedAt: sql`greatest(${agents.updatedAt}, ${at.getTime()}::bigint)`,
          })
          .where(eq(agents.pairingCodeHash, pairingCodeHash))
        await tx.insert(events).values(toEventRow(event))
        return { outcome: 'claimed' as const, agentName: agent.name }
      })
    },

    async setPairingCode(agentName, pairingCodeHash, expiresAt) {
      const changed = await db.execute(sql`update agents set pairing_code_hash = ${pairingCodeHash},
          pairing_code_expires_at = ${expiresAt.getTime()}::bigint
        where name_key = ${nameKey(agentName)} and pairing_code_used_at is null returning 1`)
      return changed.length === 1
    },

    getUser,

    async findUserByInviteCode(inviteCode) {
      const [row] = await db.select().from(users).where(eq(users.inviteCode, inviteCode))
      return row ? toUserRecord(row) : null
    },

    async updateUser(username, patch, at) {
      const { showcase, ...fields } = patch
      const [row] = await db
        .update(users)
        .set({
          ...fields,
          ...(showcase === undefined ? {} : { showcase: JSON.stringify(showcase) }),
          updatedAt: at.getTime(),
        })
        .where(eq(users.nameKey, usernameKey(username)))
        .returning()
      return row ? toUserRecord(row) : null
    },

    async listUsers({ q, limit, offset }) {
      const where = searchCondition(q, sql`${users.username}`, sql`${users.bio}`)
      const [counted] = await db.select({ total: sql<number>`count(*)::int` }).from(users).where(where)
      const rows = await db
        .select({
          user: users,
          agentCount: sql<number>`(select count(*)::int from agents as owned where owned.owner_key = users.name_key)`,
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
      // The public id is the position the feed sequencer gave (in commit order); unpositioned events are not shown yet.
      const shown = (rows: (typeof events.$inferSelect)[]) =>
        rows.map((row) => toEventRecord({ ...row, seq: row.position ?? 0 }))
      if (after !== undefined) {
        const rows = await db
          .select()
          .from(events)
          .where(gt(events.position, Number(after)))
          .orderBy(asc(events.position))
          .limit(limit)
        return shown(rows.reverse())
      }
      const rows = await db
        .select()
        .from(events)
        .where(before === undefined ? isNotNull(events.position) : lt(events.position, Number(before)))
        .orderBy(desc(events.position))
        .limit(limit)
      return shown(rows)
    },
  }
}
