import { isBuyerReview, type ReviewDecision } from '../../BuyerReview.ts'
import { ConflictError, UnauthorizedError } from '../../errors.ts'
import type { AgentStore, TaskStore } from '../../ports/Store.ts'
import { buyerWalletOf, taskAt } from '../../Task.ts'
import { DecisionInput, RejectionInput } from '../../TaskInput.ts'
import { type TaskView, toTaskView } from '../../TaskView.ts'
import { parseInput } from '../../Validation.ts'
import { type ActionContext, requireAgent } from '../context.ts'
import { jobSteps } from './jobSteps.ts'
import { requireTask } from './judging.ts'

/** The `reviewTask` action: the buyer accepts or rejects a delivery, signed by its wallet. */
export function reviewTaskAction(context: ActionContext<AgentStore & TaskStore>) {
  const { store, config, clock, feed, chain } = context
  /**
   * Accepts (`completed`) or rejects (`rejected`, a dispute record with its reason, 1-1000 characters) a delivered task
   * within its review window, with the buyer wallet's EIP-712 signature of the task's `review` typed data (BuyerReview.ts).
   */
  return async function reviewTask(
    agentName: string,
    id: string,
    decision: ReviewDecision,
    body: unknown,
  ): Promise<TaskView> {
    // A rejection is a dispute: its reason is required (RejectionInput), an acceptance's optional.
    const input = parseInput(decision === 'reject' ? RejectionInput : DecisionInput, body ?? {})
    const agent = await requireAgent(context, agentName)
    const task = await requireTask(context, agent, id)
    const reason = input.reason ?? ''
    if (task.payment?.job)
      throw new ConflictError(
        'decided_on_chain',
        `The task is a job in the job escrow: its evaluator (${task.payment.job.evaluator}) accepts or rejects on chain with the complete or reject call in escrow_job.calls.`,
      )
    if (task.status !== 'delivered')
      throw new ConflictError(
        'task_not_delivered',
        `The task is ${task.status}; only a delivered task can be accepted or rejected before its review_until.`,
      )
    const buyer = buyerWalletOf(task)
    if (!buyer)
      throw new ConflictError(
        'no_buyer_wallet',
        "The task's buyer is known by no wallet; silence past review_until accepts the delivery.",
      )
    const review = { market: config.baseUrl, agent: agent.name, task: task.id, decision, reason }
    if (!(await isBuyerReview(chain, buyer, config.chain.chainId, review, input.signature)))
      throw new UnauthorizedError(
        `signature is not ${buyer}'s EIP-712 signature of this task's review with decision "${decision}" and the reason sent: sign review (task view) with message.decision and message.reason set.`,
        'invalid_signature',
        'Signature realm="agentmarket"',
      )
    const now = clock.now()
    // A contract wallet's signature is asked of the chain: the window may have closed meanwhile.
    if (taskAt(task, now).status !== 'delivered')
      throw new ConflictError(
        'task_not_delivered',
        'The review window closed while the signature was checked; silence accepted the delivery.',
      )
    const step =
      decision === 'accept'
        ? jobSteps.acceptance(task, now, false)
        : jobSteps.rejection(task, now, buyer, reason)
    if (!(await store.changeTask(step))) {
      const current = await requireTask(context, agent, id)
      throw new ConflictError(
        'task_not_delivered',
        `The task is ${current.status} now; it was decided already.`,
      )
    }
    feed.nudge()
    return toTaskView(await requireTask(context, agent, id), config)
  }
}
