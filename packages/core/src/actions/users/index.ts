import type { AgentStore, KvStore, StoreLifecycle, UserStore } from '../../ports/Store.ts'
import type { ActionContext } from '../context.ts'
import { pairAgentAction } from './pairAgent.ts'
import { profileActions } from './profiles.ts'

export { UserListInput, type UserPage } from './profiles.ts'
export type { ProvedRequest } from './walletProof.ts'

/** Community users: pairing agents to owners (with wallet proofs), profiles, and invite codes. */
export function userActions(context: ActionContext<AgentStore & UserStore & KvStore & StoreLifecycle>) {
  return {
    /** Binds the agent holding a pairing code to a user owned by the signing wallet (SPEC row 15). */
    pairAgent: pairAgentAction(context),
    ...profileActions(context),
  }
}
