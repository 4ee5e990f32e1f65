import * as v from 'valibot'
import { type Address, getAddress, isAddress } from 'viem'
import type { AgentView } from '../../AgentView.ts'
import { generateId } from '../../Credentials.ts'
import {
  ConflictError,
  ForbiddenError,
  InvalidInputError,
  NotFoundError,
  UnauthorizedError,
} from '../../errors.ts'
import { feedEvents } from '../../events.ts'
import type { AgentStore, KvStore, UserStore } from '../../ports/Store.ts'
import { PairAgentInput, Username, type UserRecord, type UserView } from '../../User.ts'
import { parseInput } from '../../Validation.ts'
import { type ActionContext, agentView } from '../context.ts'
import { profileOf, requireUser } from './profiles.ts'
import { notThisWalletDetail, type ProvedRequest, proveWallet, WALLET_CHALLENGE } from './walletProof.ts'

/** A checksummed address from the X-Wallet-Address header, or a 400. */
function walletFromHeader(header: string | undefined): Address {
  if (header && isAddress(header)) return getAddress(header)
  if (!header?.trim())
    throw new InvalidInputError(
      'invalid_wallet_address',
      'Header X-Wallet-Address is missing: send the address of the wallet that signs this request and will own the user (0x + 40 hex digits).',
    )
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

/** The `pairAgent` action (SPEC row 15). */
export function pairAgentAction(context: ActionContext<AgentStore & UserStore & KvStore>) {
  const { store, clock, random, feed } = context
  /**
   * Binds the agent holding `pairingCode` to `username` (created on first use) owned by the wallet the header names,
   * proved by that wallet's signature of the request.
   */
  return async function pairAgent(
    username: string,
    walletHeader: string | undefined,
    request: ProvedRequest,
    body: unknown,
  ): Promise<{ agent: AgentView; user: UserView }> {
    const name = usernameFromPath(username)
    const wallet = walletFromHeader(walletHeader)
    if ((await proveWallet(context, wallet, request)) === 'wrong_wallet')
      throw new UnauthorizedError(
        notThisWalletDetail(context, request, `the wallet in X-Wallet-Address (${wallet})`),
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
    const digest = await context.pairing.existingOf(pairingCode)
    const target =
      (digest === null ? null : await store.findAgentByPairingCodeHash(digest)) ??
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
    return {
      agent: await agentView(context, agent),
      user: await profileOf(context, await requireUser(context, name)),
    }
  }
}
