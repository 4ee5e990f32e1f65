import { type AgentRecord, sellerWarnings, UpdateAgentInput } from '../../Agent.ts'
import type { AgentView } from '../../AgentView.ts'
import { feedEvents, newSkills } from '../../events.ts'
import type { AgentStore } from '../../ports/Store.ts'
import { parseInput } from '../../Validation.ts'
import {
  type ActionContext,
  agentView,
  authenticate,
  authenticateName,
  type KeySender,
  keyedWrite,
  requireAgent,
} from '../context.ts'

/** The `updateAgent` action (SPEC row 6). */
export function updateAgentAction(context: ActionContext<AgentStore>) {
  const { store, clock, feed } = context
  /** Replaces the fields sent (bearer key of that agent); `skills`, when sent, replaces the whole list. */
  return async function updateAgent(
    name: string,
    apiKey: string | undefined,
    body: unknown,
  ): Promise<AgentView & { warnings: string[] }> {
    // The key remembered here lets the request through to a write that checks it again (a rotation elsewhere stops it).
    const sender = await authenticateName(context, name, apiKey)
    const patch = parseInput(UpdateAgentInput, body ?? {})
    // A listing moved out of deprecated drops its notice.
    if (patch.listing !== undefined && patch.listing !== 'deprecated' && patch.listingMessage === undefined)
      patch.listingMessage = null
    const fields = Object.keys(patch)
    // Nothing known to change: no write, so revision, card version and activity stay as they are.
    if (fields.length === 0) return answer(await authenticate(context, name, apiKey))
    const now = clock.now()
    // Only new skills need the list as it was (each newly published one is an event).
    const before = patch.skills ? (await requireAgent(context, sender.name)).skills : []
    const update = ({ name: agentName, apiKeyHash }: KeySender) => {
      const published = patch.skills ? newSkills(before, patch.skills) : []
      const events = [
        feedEvents.updated(agentName, fields, now),
        ...published.map((skill) => feedEvents.skillPublished(agentName, skill, now)),
      ]
      return store.updateAgent(agentName, patch, now, events, apiKeyHash)
    }
    const { written } = await keyedWrite(context, sender, update)
    feed.nudge()
    return answer(written)
  }

  /** The answer of an update: the agent's record as it is, and what a seller is still missing. */
  async function answer(agent: AgentRecord): Promise<AgentView & { warnings: string[] }> {
    return { ...(await agentView(context, agent)), warnings: sellerWarnings(agent) }
  }
}
