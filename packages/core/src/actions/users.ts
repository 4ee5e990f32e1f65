import * as v from 'valibot'
import { type Address, getAddress, isAddress } from 'viem'
import { type AgentView, toAgentSummary } from '../Agent.ts'
import { generateId } from '../Credentials.ts'
import {
  ConflictError,
  ForbiddenError,
  InvalidInputError,
  NotFoundError,
  UnauthorizedError,
} from '../errors.ts'
import { feedEvents } from '../events.ts'
import { spendProof } from '../ProofLedger.ts'
import {
  PairAgentInput,
  toUserSummary,
  toUserView,
  UpdateUserInput,
  Username,
  type UserRecord,
  type UserSummary,
  type UserView,
} from '../User.ts'
import { parseInput } from '../Validation.ts'
import { checkWalletProof, type WalletProof } from '../WalletProof.ts'
import { AgentListInput } from './agents.ts'
import { type ActionContext, agentView } from './context.ts'

/** Query of GET /api/community/users: like the agent list, `q` matching username or bio. */
export const UserListInput = AgentListInput

/** One page of the user list. */
export type UserPage = { users: UserSummary[]; total: number; limit: number; offset: number }

/** The request a wallet proof was made for: its method, the path the client called and its exact body bytes. */
export type ProvedRequest = { proof: WalletProof; method: string; path: string; body?: Uint8Array }

const WALLET_CHALLENGE =
  'WalletSignature realm="agentmarket", scheme="eip712", headers="X-Wallet-Signature X-Wallet-Timestamp X-Wallet-Scheme"'

/** A checksummed address from the X-Wallet-Address header, or a 400. */
function walletFromHeader(header: string | undefined): Address {
  if (header && isAddress(header)) return getAddress(header)
  throw new InvalidInputError(
    'invalid_wallet_address',
    'Header X-Wallet-Address must be a 20-byte hex address (0x + 40 hex digits, valid EIP-55 checksum if mixed case).',
  )
}

/** A username from a path that names a user to create, or a 400. */
function usernameFromPath(username: string): string {
  const result = v.safeParse(Username, username)
  if (result.success) return result.output
  throw new InvalidInputError(
    'invalid_username',
    `Usernames are 2-50 letters, digits, hyphens or underscores; got "${username}".`,
  )
}

/** Community users: pairing agents to owners, profiles, and invite codes. */
export function userActions(context: ActionContext) {
  const { store, config, clock, random, feed } = context

  const requireUser = async (username: string): Promise<UserRecord> => {
    const user = await store.getUser(username)
    if (!user) throw new NotFoundError('user_not_found', `No user is named "${username}".`)
    return user
  }

  const profile = async (user: UserRecord): Promise<UserView> => {
    const now = clock.now()
    const owned = await store.listAgentsOwnedBy(user.username)
    return toUserView(
      user,
      owned.map((agent) => toAgentSummary(agent, now, config.baseUrl)),
    )
  }

  /**
   * Whether `wallet` signed this very request (`wrong_wallet`: a valid signature by another), once: a 401 when
   * unproved, stale, or a proof already spent.
   */
  const proveWallet = async (wallet: Address, request: ProvedRequest): Promise<'ok' | 'wrong_wallet'> => {
    const { proof, method, path } = request
    const now = clock.now()
    const target = { market: config.baseUrl, method, path, body: request.body ?? new Uint8Array() }
    const result = await checkWalletProof(wallet, proof, target, now, {
      legacy: config.walletProofLegacy,
      chain: context.chain,
    })
    if (result.ok) {
      if (await spendProof(store, wallet, result.id, result.at, now)) return 'ok'
      throw new UnauthorizedError(
        'This wallet proof was already used: sign each request afresh (a new timestamp).',
        'proof_replayed',
        WALLET_CHALLENGE,
      )
    }
    if (result.reason === 'wrong_wallet') return 'wrong_wallet'
    const details = {
      missing: `Sign the EIP-712 typed data WalletRequest {market: "${config.baseUrl}", method: "${method.toUpperCase()}", path: "${path}", body: keccak256 of the exact body bytes (of none when there is no body), timestamp: unix milliseconds} in domain {name: "agentmarket", version: "1"} with the wallet (eth_signTypedData_v4); send X-Wallet-Signature, X-Wallet-Timestamp (the milliseconds) and X-Wallet-Scheme: eip712.`,
      stale_timestamp:
        'X-Wallet-Timestamp must be the current time (eip712: unix milliseconds; else unix seconds), at most 5 minutes old and 30 s ahead of the server clock.',
      invalid_signature: 'X-Wallet-Signature is not a valid signature of this request.',
      legacy_refused:
        'This server takes only EIP-712 wallet proofs: send X-Wallet-Scheme: eip712 with a signature of the WalletRequest typed data.',
    }
    throw new UnauthorizedError(
      details[result.reason],
      result.reason === 'missing' ? 'wallet_proof_required' : result.reason,
      WALLET_CHALLENGE,
    )
  }

  /** The user, if the request carries a fresh signature by the user's wallet: 401 or 403 otherwise. */
  const proveOwner = async (username: string, request: ProvedRequest): Promise<UserRecord> => {
    const user = await requireUser(username)
    if ((await proveWallet(user.walletAddress, request)) === 'ok') return user
    throw new ForbiddenError("The signature is valid but not made by this user's wallet.")
  }

  return {
    /**
     * Binds the agent holding `pairingCode` to `username` (created on first use) owned by the wallet the header names,
     * proved by that wallet's signature of the request.
     */
    async pairAgent(
      username: string,
      walletHeader: string | undefined,
      request: ProvedRequest,
      body: unknown,
    ): Promise<{ agent: AgentView; user: UserView }> {
      const name = usernameFromPath(username)
      const wallet = walletFromHeader(walletHeader)
      if ((await proveWallet(wallet, request)) === 'wrong_wallet')
        throw new UnauthorizedError(
          'X-Wallet-Signature was not made by the wallet in X-Wallet-Address.',
          'invalid_signature',
          WALLET_CHALLENGE,
        )
      const { pairingCode } = parseInput(PairAgentInput, body ?? {})
      const now = clock.now()
      const newUser: UserRecord = {
        username: name,
        walletAddress: wallet,
        bio: null,
        showcase: {},
        inviteCode: generateId(random, 'inv_'),
        createdAt: now,
        updatedAt: now,
      }
      const target =
        (await store.findAgentByPairingCodeHash(await context.pairing.of(pairingCode))) ??
        (await store.findAgentByPairingCodeHash(context.pairing.legacyOf(pairingCode)))
      if (!target) throw new NotFoundError('pairing_code_not_found', 'No agent has this pairing code.')
      const { pairingCodeHash, pairingCodeExpiresAt: expiresAt } = target
      if (!target.pairingCodeUsedAt && expiresAt && expiresAt.getTime() <= now.getTime())
        throw new ConflictError(
          'pairing_code_expired',
          `This pairing code expired at ${expiresAt.toISOString()}; the agent issues a new one with POST /api/agents/${target.name}/pairing-code.`,
        )
      const event = feedEvents.claimed(target.name, name, now)
      const result = await store.claimAgent({ pairingCodeHash, newUser, at: now, event })
      if (result.outcome !== 'claimed') {
        if (result.outcome === 'wallet_mismatch')
          throw new ForbiddenError(`The username "${name}" belongs to another wallet.`)
        if (result.outcome === 'code_used')
          throw new ConflictError('pairing_code_used', 'This pairing code has already been used.')
        throw new NotFoundError('pairing_code_not_found', 'No agent has this pairing code.')
      }
      feed.nudge()
      const agent = await store.getAgent(result.agentName)
      if (!agent) throw new NotFoundError('agent_not_found', `No agent is named "${result.agentName}".`)
      return { agent: await agentView(context, agent), user: await profile(await requireUser(name)) }
    },

    /** A page of users, newest first, optionally filtered by `q` (username or bio). */
    async listUsers(query: unknown): Promise<UserPage> {
      const { q, limit, offset } = parseInput(UserListInput, query ?? {}, 'invalid_query')
      const page = await store.listUsers({ q: q || undefined, limit, offset })
      return { users: page.users.map(toUserSummary), total: page.total, limit, offset }
    },

    /** A user's public profile with the agents they own. */
    async getUser(username: string): Promise<UserView> {
      return profile(await requireUser(username))
    },

    /** Edits `bio` and `showcase`, proved by a signature of the user's wallet. */
    async updateUser(username: string, request: ProvedRequest, body: unknown): Promise<UserView> {
      const user = await proveOwner(username, request)
      const patch = parseInput(UpdateUserInput, body ?? {})
      if (Object.keys(patch).length === 0) return profile(user)
      const updated = await store.updateUser(user.username, patch, clock.now())
      return profile(updated ?? user)
    },

    /** The user's own invite code, proved by a signature of the user's wallet. */
    async getInvite(
      username: string,
      request: ProvedRequest,
    ): Promise<{ username: string; inviteCode: string }> {
      const user = await proveOwner(username, request)
      return { username: user.username, inviteCode: user.inviteCode }
    },
  }
}
