import { ConflictError } from '../../errors.ts'
import { CompleteTaskInput, type SellerTaskView, taskDueAt, toSellerTaskView } from '../../Task.ts'
import { parseInput } from '../../Validation.ts'
import { type ActionContext, authenticate } from '../context.ts'
import { jobSteps } from './jobSteps.ts'
import { requireTask } from './judging.ts'

/** The `completeTask` action: the seller's delivery. */
export function completeTaskAction(context: ActionContext) {
  const { store, config, clock, feed } = context
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
    if (task.status !== 'paid' || !(await store.changeTask(jobSteps.delivery(task, resultUrl, now)))) {
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
    return toSellerTaskView(await requireTask(context, agent, id), config)
  }
}
