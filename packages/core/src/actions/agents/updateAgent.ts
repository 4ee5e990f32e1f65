import { sellerWarnings, UpdateAgentInput } from '../../Agent.ts'
import type { AgentView } from '../../AgentView.ts'
import { NotFoundError } from '../../errors.ts'
import { feedEvents, newSkills } from '../../events.ts'
import type { AgentStore } from '../../ports/Store.ts'
import { parseInput } from '../../Validation.ts'
import { type ActionContext, agentView, authenticate } from '../context.ts'

/** The `updateAgent` action (SPEC row 6). */
export function updateAgentAction(context: ActionContext<AgentStore>) {
  const { store, clock, feed } = context
  /** Replaces the fields sent (bearer key of that agent); `skills`, when sent, replaces the whole list. */
  return async function updateAgent(
    name: string,
    apiKey: string | undefined,
    body: unknown,
  ): Promise<AgentView & { warnings: string[] }> {
    const agent = await authenticate(context, name, apiKey)
    const patch = parseInput(UpdateAgentInput, body ?? {})
    // A listing moved out of deprecated drops its notice.
    if (patch.listing !== undefined && patch.listing !== 'deprecated' && patch.listingMessage === undefined)
      patch.listingMessage = null
    const fields = Object.keys(patch)
    // Nothing known to change: no write, so revision, card version and activity stay as they are.
    if (fields.length === 0) return { ...(await agentView(context, agent)), warnings: sellerWarnings(agent) }
    const now = clock.now()
    const published = patch.skills ? newSkills(agent.skills, patch.skills) : []
    const events = [
      feedEvents.updated(agent, fields, now),
      ...published.map((skill) => feedEvents.skillPublished(agent.name, skill, now)),
    ]
    const updated = await store.updateAgent(agent.name, patch, now, events)
    if (!updated) throw new NotFoundError('agent_not_found', `No agent is named "${name}".`)
    feed.nudge()
    return { ...(await agentView(context, updated)), warnings: sellerWarnings(updated) }
  }
}
