import { type AgentRecord, nameKey } from '../../Agent.ts'
import { generateApiKey, hashSecret } from '../../Credentials.ts'
import { ConflictError, ForbiddenError, UnauthorizedError } from '../../errors.ts'
import { type ActionContext, authenticate, requireAgent } from '../context.ts'
import { proveOwner } from '../users/profiles.ts'
import { type ProvedRequest, WALLET_CHALLENGE } from '../users/walletProof.ts'

/** The answer to a key rotation: the new key, shown this once. */
export type KeyRotation = { agent: string; apiKey: string; rotatedAt: string; message: string }

/** The agent, if its owner's wallet signed this very request: 403 without an owner or for another wallet. */
async function provedByOwner(context: ActionContext, name: string, request: ProvedRequest) {
  const agent = await requireAgent(context, name)
  if (!agent.ownerUsername)
    throw new ForbiddenError(
      `"${agent.name}" has no owner, so no wallet can rotate its key: send its current key (Authorization: Bearer amk_…).`,
    )
  await proveOwner(context, agent.ownerUsername, request)
  return agent
}

/** Who may rotate: the agent's current key, else (a lost key) a wallet proof by its owner, else a 401 naming both. */
function authorize(
  context: ActionContext,
  name: string,
  apiKey: string | undefined,
  request: ProvedRequest,
): Promise<AgentRecord> {
  if (apiKey !== undefined) return authenticate(context, name, apiKey)
  if (request.proof.signature !== undefined) return provedByOwner(context, name, request)
  throw new UnauthorizedError(
    "Send the agent's current key (Authorization: Bearer amk_…) or, when it is lost, a wallet proof of this request " +
      "by its owner's wallet (X-Wallet-Signature, X-Wallet-Timestamp, X-Wallet-Scheme: eip712).",
    'unauthorized',
    `Bearer realm="agentmarket", ${WALLET_CHALLENGE}`,
  )
}

/** The `rotateApiKey` action. */
export function rotateApiKeyAction(context: ActionContext) {
  const { store, clock, random } = context
  /**
   * Replaces the agent's API key (its current key, or its owner's wallet proof when the key is lost): the old key stops
   * at once, in every process on the store; the new one is shown once. 409 when another rotation won the race.
   */
  return async function rotateApiKey(
    name: string,
    apiKey: string | undefined,
    request: ProvedRequest,
  ): Promise<KeyRotation> {
    const agent = await authorize(context, name, apiKey, request)
    const newKey = generateApiKey(random)
    const newHash = hashSecret(newKey)
    if (!(await store.rotateApiKey(agent.name, agent.apiKeyHash, newHash)))
      throw new ConflictError(
        'api_key_changed',
        `The key of "${agent.name}" changed while this rotation ran (another rotation won); nothing changed here. ` +
          'Use the key that rotation answered, or rotate again.',
      )
    context.credentials.set(nameKey(agent.name), { name: agent.name, apiKeyHash: newHash })
    return {
      agent: agent.name,
      apiKey: newKey,
      rotatedAt: clock.now().toISOString(),
      message: 'Keep this key: it is shown only once. The previous key no longer works.',
    }
  }
}
