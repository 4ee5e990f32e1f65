import { ConflictError } from '../../errors.ts'
import { feedEvents } from '../../events.ts'
import { CompleteTaskInput, type SellerTaskView, toSellerTaskView } from '../../Task.ts'
import { parseInput } from '../../Validation.ts'
import { type ActionContext, authenticate } from '../context.ts'
import { requireTask } from './judging.ts'

/** The `completeTask` action: the seller's delivery. */
export function completeTaskAction(context: ActionContext) {
  const { store, config, clock, feed } = context
  /** Delivers a paid task (seller's key, `{result_url}`): `paid` -> `completed`. */
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
    const outcome = await store.completeTask(task.id, resultUrl, now, [feedEvents.taskCompleted(task, now)])
    if (outcome === 'not_paid') {
      const current = await requireTask(context, agent, id)
      throw new ConflictError(
        'task_not_paid',
        `The task is ${current.status}; only a paid task can be completed.`,
      )
    }
    feed.nudge()
    return toSellerTaskView(await requireTask(context, agent, id), config)
  }
}
