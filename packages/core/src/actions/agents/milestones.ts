import { nameKey } from '../../Agent.ts'
import { generateId } from '../../Credentials.ts'
import { feedEvents } from '../../events.ts'
import {
  MilestoneInput,
  MilestoneListInput,
  type MilestonePage,
  type MilestoneRecord,
  type MilestoneView,
  milestoneTrust,
  toMilestoneView,
} from '../../Milestone.ts'
import type { AgentStore, StoreLifecycle } from '../../ports/Store.ts'
import { readCache } from '../../ReadCache.ts'
import { parseInput } from '../../Validation.ts'
import { type ActionContext, authenticateName, type KeySender, keyedWrite, requireAgent } from '../context.ts'

/** The milestone actions (SPEC rows 13 and 14). */
export function milestoneActions(context: ActionContext<AgentStore & StoreLifecycle>) {
  const { store, clock, random, feed } = context
  const pages = readCache<MilestonePage>()
  return {
    /** Records a milestone (bearer key of that agent); a proof URL makes it `verified`. */
    async recordMilestone(name: string, apiKey: string | undefined, body: unknown): Promise<MilestoneView> {
      // The key remembered here lets the milestone through to a write that checks it again (a rotation elsewhere stops it).
      const sender = await authenticateName(context, name, apiKey)
      const input = parseInput(MilestoneInput, body)
      const id = generateId(random, 'ms_')
      const createdAt = clock.now()
      const record = async ({ name: agentName, apiKeyHash }: KeySender) => {
        const milestone: MilestoneRecord = {
          id,
          agentName,
          date: input.date,
          title: input.title,
          description: input.description ?? null,
          proof: input.proof ?? null,
          trust: milestoneTrust(input.proof),
          createdAt,
        }
        return (await store.insertMilestone(milestone, [feedEvents.milestone(milestone)], apiKeyHash))
          ? milestone
          : null
      }
      const { written: milestone } = await keyedWrite(context, sender, record)
      feed.nudge()
      return toMilestoneView(milestone)
    },

    /** A page of an agent's milestones, newest first, kept in the read cache until the store changes. */
    async listMilestones(name: string, query?: unknown): Promise<MilestonePage> {
      const { limit, offset } = parseInput(MilestoneListInput, query ?? {}, 'invalid_query')
      const key = `${nameKey(name)}\n${limit}\n${offset}`
      return pages.read(key, await store.changeVersion?.(), clock.now(), async () => {
        const agent = await requireAgent(context, name)
        const milestones = (await store.listMilestones(agent.name, limit, offset)).map(toMilestoneView)
        const total = agent.verifiedMilestones + agent.claimedMilestones
        return { value: { milestones, total, limit, offset }, validUntil: Number.POSITIVE_INFINITY }
      })
    },
  }
}
