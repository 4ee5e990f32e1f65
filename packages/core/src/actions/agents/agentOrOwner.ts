import type { AgentRecord } from '../../Agent.ts'
import { ForbiddenError, UnauthorizedError } from '../../errors.ts'
import type { AgentStore, KvStore, UserStore } from '../../ports/Store.ts'
import { type ActionContext, authenticate, requireAgent } from '../context.ts'
import { proveOwner } from '../users/profiles.ts'
import { type ProvedRequest, WALLET_CHALLENGE } from '../users/walletProof.ts'

/** The agent, if its owner's wallet signed this very request: 403 without an owner or for another wallet. */
async function provedByOwner(
  context: ActionContext<AgentStore & UserStore & KvStore>,
  name: string,
  request: ProvedRequest,
) {
  const agent = await requireAgent(context, name)
  if (!agent.ownerUsername)
    throw new ForbiddenError(
      `"${agent.name}" has no owner, so no wallet can act for it: send its current key (Authorization: Bearer amk_…).`,
    )
  await proveOwner(context, agent.ownerUsername, request)
  return agent
}

/**
 * The agent `name`, for a request carrying its key, else a wallet proof of this very request by its owner's wallet
 * (`request`; null where none can be made, e.g. MCP), else a 401 naming both.
 */
export function agentOrOwner(
  context: ActionContext<AgentStore & UserStore & KvStore>,
  name: string,
  apiKey: string | undefined,
  request: ProvedRequest | null,
): Promise<AgentRecord> {
  if (apiKey !== undefined) return authenticate(context, name, apiKey)
  if (request && request.proof.signature !== undefined) return provedByOwner(context, name, request)
  throw new UnauthorizedError(
    "Send the agent's key (Authorization: Bearer amk_…) or a wallet proof of this request " +
      "by its owner's wallet (X-Wallet-Signature, X-Wallet-Timestamp, X-Wallet-Scheme: eip712).",
    'unauthorized',
    `Bearer realm="agentmarket", ${WALLET_CHALLENGE}`,
  )
}
