import { ConflictError } from '../../errors.ts'
import type { AgentStore, TaskStore, UserStore } from '../../ports/Store.ts'
import { type TaskRecord, taskDueAt } from '../../Task.ts'
import { CompleteTaskInput } from '../../TaskInput.ts'
import type { SellerTaskView } from '../../TaskView.ts'
import { parseInput } from '../../Validation.ts'
import { type ActionContext, authenticate } from '../context.ts'
import { jobSteps, ownerWallets } from './jobSteps.ts'
import { requireTask } from './judging.ts'
import { sellerView } from './sellerViews.ts'

/** The `completeTask` action: the seller's delivery. */
export function completeTaskAction(context: ActionContext<AgentStore & UserStore & TaskStore>) {
  const { store, clock, feed } = context
  /**
   * Delivers a paid task (seller's key, `{result_url}`) before its `due_at`: `completed` at once when the task has no
   * review window (SPEC's `paid` -> `completed`), else `delivered` until the buyer accepts or the window closes.
   */
  return async function completeTask(
    agentName: string,
    id: string,
    apiKey: string | undefined,
    body: unknown,
  ): Promise<SellerTaskView> {
    const agent = await authenticate(context, agentName, apiKey)
    const { result_url: resultUrl } = parseInput(CompleteTaskInput, body)
    const task = await requireTask(context, agent, id)
    const now = clock.now()
    if (task.status === 'paid' && task.payment?.job) return keepResult(task, resultUrl, now)
    const delivery = jobSteps.delivery(task, resultUrl, now, await ownerWallets(context, agent))
    if (task.status !== 'paid' || !(await store.changeTask(delivery))) {
      const current = await requireTask(context, agent, id)
      if (current.outcome === 'late')
        throw new ConflictError(
          'task_overdue',
          `The task was due at ${taskDueAt(current)?.toISOString()} and was not delivered by then; it expired.`,
        )
      throw new ConflictError(
        'task_not_paid',
        `The task is ${current.status}; only a paid task can be completed.`,
      )
    }
    feed.nudge()
    return sellerView(context, await requireTask(context, agent, id))
  }

  /**
   * A job in escrow is delivered on chain (the seller's submit, before deliver_by): the result URL is kept, and the
   * answer's escrow_job.calls carries the submit call committing to it. The task moves when the chain shows it. At or
   * past deliver_by: 409 task_overdue, nothing kept.
   */
  async function keepResult(task: TaskRecord, resultUrl: string, now: Date): Promise<SellerTaskView> {
    const deliverBy = taskDueAt(task)
    // The contract's submit reverts from deliver_by on: no result is kept and no call answered that cannot land.
    if (deliverBy && now >= deliverBy)
      throw new ConflictError(
        'task_overdue',
        `The job's deliver_by was ${deliverBy.toISOString()}: the escrow no longer takes a submit; after it anyone may send claimRefund (escrow_job.calls).`,
      )
    if (task.resultUrl !== null && task.resultUrl !== resultUrl)
      throw new ConflictError(
        'result_committed',
        `This job's result is ${task.resultUrl}: its submit call commits to it on chain. Submit that one.`,
      )
    const step = { id: task.id, from: ['paid'] as const, to: 'paid' as const, at: now, resultUrl, events: [] }
    if (!(await store.changeTask(step)))
      throw new ConflictError('task_not_paid', 'The task moved on chain meanwhile; read it again.')
    return sellerView(context, { ...task, resultUrl })
  }
}
