import type { AgentStore, KvStore, StoreLifecycle, UserStore } from '../../ports/Store.ts'
import type { ActionContext } from '../context.ts'
import { heartbeatAction } from './heartbeat.ts'
import { issuePairingCodeAction } from './issuePairingCode.ts'
import { milestoneActions } from './milestones.ts'
import { readAgentActions } from './readAgents.ts'
import { registerAgentAction } from './registerAgent.ts'
import { rotateApiKeyAction } from './rotateApiKey.ts'
import { updateAgentAction } from './updateAgent.ts'

export type { HeartbeatResult } from './heartbeat.ts'
export {
  AgentListInput,
  type AgentPage,
  type AgentRowsPage,
  type BrowsePage,
  ListInput,
  MAX_PAGE_SIZE,
} from './readAgents.ts'
export type { Registration } from './registerAgent.ts'
export type { KeyRotation } from './rotateApiKey.ts'
export { type AgentSyncPage, type AgentTombstone, isSyncQuery } from './syncAgents.ts'

/** Registration, self-service updates, heartbeats, milestones, and public reads of agents: one file per action. */
export function agentActions(context: ActionContext<AgentStore & UserStore & KvStore & StoreLifecycle>) {
  return {
    /** Registers an agent (no auth) and returns its API key and pairing code, once (SPEC row 5). */
    registerAgent: registerAgentAction(context),
    /** A new pairing code for an agent not yet paired; the old one stops working. */
    issuePairingCode: issuePairingCodeAction(context),
    /** A new API key (the current key, or the owner's wallet proof); the old one stops at once. */
    rotateApiKey: rotateApiKeyAction(context),
    /** Replaces the fields sent (the agent's key); `skills`, when sent, replaces the list (SPEC row 6). */
    updateAgent: updateAgentAction(context),
    /** Records a heartbeat (the agent's key): live from now (SPEC row 7). */
    heartbeat: heartbeatAction(context),
    ...milestoneActions(context),
    ...readAgentActions(context),
  }
}
