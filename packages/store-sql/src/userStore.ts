import type { FeedStore, UserStore } from '@agentmarket/core'
import { toEventRecord, toUserRecord, usernameKey } from '@agentmarket/core/rows'
import { asc, desc, eq, gt, isNotNull, lt, sql } from 'drizzle-orm'
import { searchCondition } from './agentList.ts'
import type { WithSkills } from './agentStore.ts'
import type { Executor, RowOf } from './executor.ts'

/** The user reads and profile writes both stores run alike. */
type SharedUserMethods = Pick<
  UserStore,
  'findAgentByPairingCodeHash' | 'findUserByInviteCode' | 'updateUser' | 'listUsers'
>

/**
 * The user methods both stores run alike, and the feed's reads, over a store's executor.
 * @example const reads = userReads(x, skillsRead(x))
 */
export function userReads(x: Executor, withSkills: WithSkills): SharedUserMethods & FeedStore {
  const { agents, users, events } = x.tables
  return {
    async findAgentByPairingCodeHash(pairingCodeHash) {
      const [row] = await x.rows({ from: 'agents', where: eq(agents.pairingCodeHash, pairingCodeHash) })
      return row ? ((await withSkills([row]))[0] ?? null) : null
    },

    async findUserByInviteCode(inviteCode) {
      const [row] = await x.rows({ from: 'users', where: eq(users.inviteCode, inviteCode) })
      return row ? toUserRecord(row) : null
    },

    async updateUser(username, patch, at) {
      const { showcase, ...fields } = patch
      const [row] = await x.update(
        'users',
        {
          ...fields,
          ...(showcase === undefined ? {} : { showcase: JSON.stringify(showcase) }),
          updatedAt: at.getTime(),
        },
        eq(users.nameKey, usernameKey(username)),
      )
      return row ? toUserRecord(row) : null
    },

    async listUsers({ q, limit, offset }) {
      const where = searchCondition(x.sql, q, users.username, users.bio)
      const total = await x.count({ from: 'users', where })
      const rows = await x.select(
        {
          user: users,
          // Qualified by hand: drizzle renders the outer column unqualified, which the subquery would rebind.
          agentCount: sql<number>`(select ${x.sql.count} from "agents" as "owned" where "owned"."owner_key" = "users"."name_key")`,
        },
        { from: 'users', where, orderBy: [desc(users.createdAt), asc(users.nameKey)], limit, offset },
      )
      return { users: rows.map((row) => ({ ...toUserRecord(row.user), agentCount: row.agentCount })), total }
    },

    async listEvents({ limit, after, before }) {
      // The public id: SQLite's sequence; in PostgreSQL the position the feed sequencer gave (in commit order), where
      // unpositioned events are not shown yet.
      const positioned = 'position' in events ? events.position : null
      const id = positioned ?? events.seq
      const shown = (rows: RowOf<'events'>[]) =>
        rows.map((row) =>
          toEventRecord({
            ...row,
            seq: positioned ? ((row as { position?: number | null }).position ?? 0) : row.seq,
          }),
        )
      if (after !== undefined) {
        const rows = await x.rows({ from: 'events', where: gt(id, Number(after)), orderBy: [asc(id)], limit })
        return shown(rows.reverse())
      }
      const where =
        before !== undefined ? lt(id, Number(before)) : positioned ? isNotNull(positioned) : undefined
      return shown(await x.rows({ from: 'events', where, orderBy: [desc(id)], limit }))
    },
  }
}
