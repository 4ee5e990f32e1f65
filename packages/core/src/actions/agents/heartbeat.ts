import { feedEvents } from '../../events.ts'
import { LIVE_WINDOW_MS } from '../../Liveness.ts'
import type { AgentStore } from '../../ports/Store.ts'
import { type ActionContext, authenticateName, type KeySender, keyedWrite } from '../context.ts'

/** The answer to a heartbeat. */
export type HeartbeatResult = { status: 'live'; lastSeen: string; agent: string }

/** The `heartbeat` action (SPEC row 7). */
export function heartbeatAction(context: ActionContext<AgentStore>) {
  const { store, clock, feed } = context
  /** Records a heartbeat (bearer key of that agent): the agent is live from now. */
  return async function heartbeat(name: string, apiKey: string | undefined): Promise<HeartbeatResult> {
    const now = clock.now()
    const record = ({ name: agentName, apiKeyHash }: KeySender) => {
      const event = feedEvents.online(agentName, now)
      const online = { event, notSeenSince: new Date(now.getTime() - LIVE_WINDOW_MS) }
      return store.recordHeartbeat(agentName, now, online, apiKeyHash)
    }
    const { sender } = await keyedWrite(context, await authenticateName(context, name, apiKey), record)
    feed.nudge()
    return { status: 'live', lastSeen: now.toISOString(), agent: sender.name }
  }
}
