import type { FeedStore, UserRecord, UserStore } from '@agentmarket/core'
import { nameKey, toEventRow, toUserRecord, type UserRow, usernameKey } from '@agentmarket/core/rows'
import { userReads } from '@agentmarket/store-sql'
import { eq, sql } from 'drizzle-orm'
import { skillsReader } from './agentStore.ts'
import { sqliteExecutor } from './executor.ts'
import type { Database } from './open.ts'
import { agents, events, users } from './schema.ts'
import { named, shapedRead } from './shapedReads.ts'
import { batchWriter } from './writes.ts'

/** Users, pairing codes and their claims, and the feed's reads, of the libSQL Store. */
export function userStore(database: Database): UserStore & FeedStore {
  const { db, connection } = database
  const { writeBatch } = batchWriter(database)
  const userByKey = shapedRead<UserRow>(
    connection,
    db
      .select(named(users))
      .from(users)
      .where(eq(users.nameKey, sql.placeholder('key'))),
  )
  const getUser = async (username: string): Promise<UserRecord | null> => {
    const row = userByKey.get({ key: usernameKey(username) })
    return row ? toUserRecord(row) : null
  }

  return {
    ...userReads(sqliteExecutor(database), skillsReader(database).withSkills),

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
  }
}
