import { nameKey } from '../../Agent.ts'
import { generateApiKey, hashSecret } from '../../Credentials.ts'
import { ConflictError } from '../../errors.ts'
import type { AgentStore, KvStore, UserStore } from '../../ports/Store.ts'
import type { ActionContext } from '../context.ts'
import type { ProvedRequest } from '../users/walletProof.ts'
import { agentOrOwner } from './agentOrOwner.ts'

/** The answer to a key rotation: the new key, shown this once. */
export type KeyRotation = { agent: string; apiKey: string; rotatedAt: string; message: string }

/** The `rotateApiKey` action. */
export function rotateApiKeyAction(context: ActionContext<AgentStore & UserStore & KvStore>) {
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
    const agent = await agentOrOwner(context, name, apiKey, request)
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
