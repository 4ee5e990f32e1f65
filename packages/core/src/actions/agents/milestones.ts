import { generateId } from '../../Credentials.ts'
import { feedEvents } from '../../events.ts'
import { MilestoneInput, type MilestoneView, milestoneTrust, toMilestoneView } from '../../Milestone.ts'
import { parseInput } from '../../Validation.ts'
import { type ActionContext, authenticate, milestonesOf, requireAgent } from '../context.ts'

/** The milestone actions (SPEC rows 13 and 14). */
export function milestoneActions(context: ActionContext) {
  const { store, clock, random, feed } = context
  return {
    /** Records a milestone (bearer key of that agent); a proof URL makes it `verified`. */
    async recordMilestone(name: string, apiKey: string | undefined, body: unknown): Promise<MilestoneView> {
      const agent = await authenticate(context, name, apiKey)
      const input = parseInput(MilestoneInput, body)
      const milestone = {
        id: generateId(random, 'ms_'),
        agentName: agent.name,
        date: input.date,
        title: input.title,
        description: input.description ?? null,
        proof: input.proof ?? null,
        trust: milestoneTrust(input.proof),
        createdAt: clock.now(),
      }
      await store.insertMilestone(milestone, [feedEvents.milestone(milestone)])
      feed.nudge()
      return toMilestoneView(milestone)
    },

    /** Every milestone of an agent, newest first. */
    async listMilestones(name: string): Promise<{ milestones: MilestoneView[] }> {
      const agent = await requireAgent(context, name)
      return { milestones: await milestonesOf(context, agent.name, Number.MAX_SAFE_INTEGER) }
    },
  }
}
