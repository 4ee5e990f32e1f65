import { generatePairingCode } from '../../Credentials.ts'
import { ConflictError } from '../../errors.ts'
import type { AgentStore, UserStore } from '../../ports/Store.ts'
import { type ActionContext, authenticate } from '../context.ts'

/** The `issuePairingCode` action. */
export function issuePairingCodeAction(context: ActionContext<AgentStore & UserStore>) {
  const { store, config, clock, random } = context
  /**
   * A new pairing code for an agent not yet paired (its bearer key): the old code stops working, the new one is
   * shown once and expires like a registration's. 409 once the agent has an owner.
   */
  return async function issuePairingCode(
    name: string,
    apiKey: string | undefined,
  ): Promise<{ pairingCode: string; pairingCodeExpiresAt: string }> {
    const agent = await authenticate(context, name, apiKey)
    const pairingCode = generatePairingCode(random, config.pairingPrefix)
    const expiresAt = new Date(clock.now().getTime() + config.pairingCodeTtlMs)
    if (!(await store.setPairingCode(agent.name, await context.pairing.of(pairingCode), expiresAt)))
      throw new ConflictError(
        'agent_already_paired',
        `"${agent.name}" already has an owner; it needs no pairing code.`,
      )
    return { pairingCode, pairingCodeExpiresAt: expiresAt.toISOString() }
  }
}
