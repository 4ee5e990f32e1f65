import { toAgentSummary } from '../../AgentView.ts'
import { ForbiddenError, NotFoundError } from '../../errors.ts'
import { livenessChangesAt } from '../../Liveness.ts'
import type { AgentStore, KvStore, StoreLifecycle, UserStore } from '../../ports/Store.ts'
import { type Expiring, readCache } from '../../ReadCache.ts'
import {
  toUserSummary,
  toUserView,
  UpdateUserInput,
  type UserRecord,
  type UserSummary,
  type UserView,
  usernameKey,
} from '../../User.ts'
import { parseInput } from '../../Validation.ts'
import { ListInput } from '../agents/index.ts'
import type { ActionContext } from '../context.ts'
import { notThisWalletDetail, type ProofSchemes, type ProvedRequest, proveWallet } from './walletProof.ts'

/** Query of GET /api/community/users: like the agent list, `q` matching username or bio. */
export const UserListInput = ListInput

/** One page of the user list. */
export type UserPage = { users: UserSummary[]; total: number; limit: number; offset: number }

/** The user named `username`, or a 404. */
export async function requireUser(
  { store }: ActionContext<UserStore>,
  username: string,
): Promise<UserRecord> {
  const user = await store.getUser(username)
  if (!user) throw new NotFoundError('user_not_found', `No user is named "${username}".`)
  return user
}

/** A user's public profile with the agents they own, and until when it stays right (their liveness shows in it). */
async function expiringProfile(
  { store, config }: ActionContext<AgentStore>,
  user: UserRecord,
  now: Date,
): Promise<Expiring<UserView>> {
  const owned = await store.listAgentsOwnedBy(user.username)
  return {
    value: toUserView(
      user,
      owned.map((agent) => toAgentSummary(agent, now, config.baseUrl)),
    ),
    validUntil: Math.min(...owned.map((agent) => livenessChangesAt(agent.lastSeen, now))),
  }
}

/** A user's public profile with the agents they own. */
export async function profileOf(context: ActionContext<AgentStore>, user: UserRecord): Promise<UserView> {
  return (await expiringProfile(context, user, context.clock.now())).value
}

/**
 * The user, if the request carries a fresh signature by the user's wallet, of a scheme the operation takes
 * (`schemes`): 400, 401 or 403 otherwise.
 */
export async function proveOwner(
  context: ActionContext<UserStore & KvStore>,
  username: string,
  request: ProvedRequest,
  schemes: ProofSchemes = 'eip712',
): Promise<UserRecord> {
  const user = await requireUser(context, username)
  if ((await proveWallet(context, user.walletAddress, request, schemes)) === 'ok') return user
  throw new ForbiddenError(notThisWalletDetail(context, request, `the wallet of user "${user.username}"`))
}

/** CONTRACT.md names the EIP-191 proof for these two operations, so they keep taking it (deprecated). */
const CONTRACT_SCHEMES: ProofSchemes = 'eip712-or-eip191'

/** Profiles: the user list, one user, the owner's edits and invite code (SPEC rows 16, 17). */
export function profileActions(context: ActionContext<AgentStore & UserStore & KvStore & StoreLifecycle>) {
  const { store, clock } = context
  const profiles = readCache<UserView>()
  return {
    /** A page of users, newest first, optionally filtered by `q` (username or bio). */
    async listUsers(query: unknown): Promise<UserPage> {
      const { q, limit, offset } = parseInput(UserListInput, query ?? {}, 'invalid_query')
      const page = await store.listUsers({ q: q || undefined, limit, offset })
      return { users: page.users.map(toUserSummary), total: page.total, limit, offset }
    },

    /** A user's public profile with the agents they own, kept under the store's change version (ADR 0002). */
    async getUser(username: string): Promise<UserView> {
      const now = clock.now()
      return profiles.read(usernameKey(username), await store.changeVersion?.(), now, async () =>
        expiringProfile(context, await requireUser(context, username), now),
      )
    },

    /** Edits `bio` and `showcase`, proved by a signature of the user's wallet. */
    async updateUser(username: string, request: ProvedRequest, body: unknown): Promise<UserView> {
      const user = await proveOwner(context, username, request, CONTRACT_SCHEMES)
      const patch = parseInput(UpdateUserInput, body ?? {})
      if (Object.keys(patch).length === 0) return profileOf(context, user)
      const updated = await store.updateUser(user.username, patch, clock.now())
      return profileOf(context, updated ?? user)
    },

    /** The user's own invite code, proved by a signature of the user's wallet. */
    async getInvite(
      username: string,
      request: ProvedRequest,
    ): Promise<{ username: string; inviteCode: string }> {
      const user = await proveOwner(context, username, request, CONTRACT_SCHEMES)
      return { username: user.username, inviteCode: user.inviteCode }
    },
  }
}
