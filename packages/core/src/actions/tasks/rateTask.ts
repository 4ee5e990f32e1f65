import * as v from 'valibot'
import type { AgentRecord } from '../../Agent.ts'
import { isPayerRating } from '../../BuyerReview.ts'
import { ConflictError, ForbiddenError, UnauthorizedError } from '../../errors.ts'
import { feedEvents } from '../../events.ts'
import type { AgentStore, TaskStore, UserStore } from '../../ports/Store.ts'
import { isRatable, type RatingView, ratingCounts, toRatingView } from '../../Rating.ts'
import type { TaskRecord } from '../../Task.ts'
import { RatingInput } from '../../TaskInput.ts'
import { type TaskView, toTaskView } from '../../TaskView.ts'
import { creditedBuyer } from '../../Trust.ts'
import { pageNumber, parseInput, strictFields } from '../../Validation.ts'
import { type ActionContext, requireAgent } from '../context.ts'
import { ownerWallets, stepOfTime } from './jobSteps.ts'
import { taskNotFound } from './judging.ts'

/** Query of GET /api/agents/{name}/ratings. */
export const RatingListInput = strictFields({
  limit: v.optional(pageNumber(1, 100), 20),
  offset: v.optional(pageNumber(0, 1_000_000_000), 0),
})

/** A page of an agent's ratings, newest first. */
export type RatingPage = { ratings: RatingView[]; total: number; limit: number; offset: number }

/** Rating a task by the wallet that paid it, and the agent's public list of ratings. */
export function ratingActions(context: ActionContext<AgentStore & UserStore & TaskStore>) {
  const { store, config, clock, feed, chain } = context

  /** The task as stored, with what time alone decided stored first (a silence past review, a missed deadline). */
  async function settledTask(agent: AgentRecord, id: string): Promise<TaskRecord> {
    const stored = await store.getTask(agent.name, id)
    if (!stored) throw taskNotFound(agent.name, id)
    const step = await stepOfTime(context, stored, clock.now())
    if (!step) return stored
    await store.changeTask(step)
    return (await store.getTask(agent.name, id)) ?? stored
  }

  return {
    /**
     * Rates a finished task paid on chain (1-5 stars, a comment), once, with the paying wallet's EIP-712 signature of
     * the task's `rate` typed data. Never from the seller's wallets or its owner's (403).
     */
    async rateTask(agentName: string, id: string, body: unknown): Promise<TaskView> {
      const input = parseInput(RatingInput, body ?? {})
      const agent = await requireAgent(context, agentName)
      const task = await settledTask(agent, id)
      const payer = task.payment?.from
      if (!isRatable(task) || !payer)
        throw new ConflictError(
          'not_ratable',
          `The task is ${task.status}${task.payment ? ` and paid by ${task.payment.method}` : ''}: only a finished task paid on the payment chain by a known wallet can be rated.`,
        )
      // The wallet the task paid and the owner's (proven by signature) are the seller's own; its current walletAddress
      // is not asked: a seller could set it to a buyer's address, unproven, to block that buyer's rating.
      if (!creditedBuyer(task, await ownerWallets(context, agent)))
        throw new ForbiddenError(
          "The wallet that paid is the seller's own: it cannot rate the seller.",
          'rating_not_allowed',
        )
      const comment = input.comment ?? ''
      const message = {
        market: config.baseUrl,
        agent: agent.name,
        task: task.id,
        score: input.score,
        comment,
      }
      if (!(await isPayerRating(chain, payer, config.chain.chainId, message, input.signature)))
        throw new UnauthorizedError(
          `signature is not ${payer}'s EIP-712 signature of this task's rating with the score and comment sent: sign rate (task view) with message.score and message.comment set.`,
          'invalid_signature',
          'Signature realm="agentmarket"',
        )
      const now = clock.now()
      const rating = { score: input.score, comment, wallet: payer, at: now }
      const events = [feedEvents.taskRated(task, input.score, now)]
      if (!(await store.rateTask(task.id, rating, events, ratingCounts(task))))
        throw new ConflictError(
          'already_rated',
          'The task was rated already: each payment rates its task once.',
        )
      feed.nudge()
      return toTaskView({ ...task, rating }, config)
    },

    /** An agent's ratings, newest first, each with its ERC-8004 feedback and proof of payment. */
    async listRatings(agentName: string, query: unknown): Promise<RatingPage> {
      const { limit, offset } = parseInput(RatingListInput, query ?? {}, 'invalid_query')
      const agent = await requireAgent(context, agentName)
      const page = await store.listRatedTasks(agent.name, limit, offset)
      const ratings = page.tasks.flatMap((task) =>
        task.rating ? [toRatingView(task, task.rating, config)] : [],
      )
      return { ratings, total: page.total, limit, offset }
    },
  }
}
