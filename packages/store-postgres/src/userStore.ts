import type { FeedStore, UserRecord, UserStore } from '@agentmarket/core'
import { nameKey, toEventRow, toUserRecord, toUserRow, usernameKey } from '@agentmarket/core/rows'
import { skillsRead, userReads } from '@agentmarket/store-sql'
import { eq, sql } from 'drizzle-orm'
import { postgresExecutor } from './executor.ts'
import type { PostgresDatabase } from './open.ts'
import { agents, events, users } from './schema.ts'

/** Users, pairing codes and their claims, and the feed's reads, of the PostgreSQL Store. */
export function userStore(database: PostgresDatabase): UserStore & FeedStore {
  const { db } = database
  const x = postgresExecutor(database)
  const getUser = async (username: string): Promise<UserRecord | null> => {
    const [row] = await db
      .select()
      .from(users)
      .where(eq(users.nameKey, usernameKey(username)))
    return row ? toUserRecord(row) : null
  }

  return {
    ...userReads(x, skillsRead(x)),

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
  }
}
