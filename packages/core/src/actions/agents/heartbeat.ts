import { UnauthorizedError } from '../../errors.ts'
import { feedEvents } from '../../events.ts'
import { LIVE_WINDOW_MS } from '../../Liveness.ts'
import type { AgentStore } from '../../ports/Store.ts'
import { type ActionContext, authenticate, authenticateName } from '../context.ts'

/** The answer to a heartbeat. */
export type HeartbeatResult = { status: 'live'; lastSeen: string; agent: string }

/** The `heartbeat` action (SPEC row 7). */
export function heartbeatAction(context: ActionContext<AgentStore>) {
  const { store, clock, feed } = context
  /** Records a heartbeat (bearer key of that agent): the agent is live from now. */
  return async function heartbeat(name: string, apiKey: string | undefined): Promise<HeartbeatResult> {
    const now = clock.now()
    const record = ({ name: agentName, apiKeyHash }: { name: string; apiKeyHash: string }) => {
      const event = feedEvents.online(agentName, now)
      const online = { event, notSeenSince: new Date(now.getTime() - LIVE_WINDOW_MS) }
      return store.recordHeartbeat(agentName, now, online, apiKeyHash)
    }
    let agent = await authenticateName(context, name, apiKey)
    // Refused when the key remembered here was rotated meanwhile: the store's own answer then decides (401 or 403).
    if (!(await record(agent))) {
      agent = await authenticate(context, name, apiKey)
      // Only a rotation landing between the two can refuse it again: the key is no longer valid.
      if (!(await record(agent))) throw new UnauthorizedError()
    }
    feed.nudge()
    return { status: 'live', lastSeen: now.toISOString(), agent: agent.name }
  }
}
