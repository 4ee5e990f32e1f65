import { NotFoundError } from '../../errors.ts'
import { feedEvents } from '../../events.ts'
import { LIVE_WINDOW_MS } from '../../Liveness.ts'
import { type ActionContext, authenticateName } from '../context.ts'

/** The answer to a heartbeat. */
export type HeartbeatResult = { status: 'live'; lastSeen: string; agent: string }

/** The `heartbeat` action (SPEC row 7). */
export function heartbeatAction(context: ActionContext) {
  const { store, clock, feed } = context
  /** Records a heartbeat (bearer key of that agent): the agent is live from now. */
  return async function heartbeat(name: string, apiKey: string | undefined): Promise<HeartbeatResult> {
    const agentName = await authenticateName(context, name, apiKey)
    const now = clock.now()
    const online = {
      event: feedEvents.online(agentName, now),
      notSeenSince: new Date(now.getTime() - LIVE_WINDOW_MS),
    }
    if (!(await store.recordHeartbeat(agentName, now, online)))
      throw new NotFoundError('agent_not_found', `No agent is named "${name}".`)
    feed.nudge()
    return { status: 'live', lastSeen: now.toISOString(), agent: agentName }
  }
}
