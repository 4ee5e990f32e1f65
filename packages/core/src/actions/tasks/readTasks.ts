import type { AgentStore, TaskStore } from '../../ports/Store.ts'
import { TASK_STATUSES, taskAt } from '../../Task.ts'
import { TaskListInput } from '../../TaskInput.ts'
import {
  type PublicTaskRow,
  type SellerTaskView,
  type TaskView,
  toPublicTaskRow,
  toTaskView,
} from '../../TaskView.ts'
import { parseInput } from '../../Validation.ts'
import { type ActionContext, authenticate, requireAgent } from '../context.ts'
import { taskNotFound } from './judging.ts'
import { sellerViews } from './sellerViews.ts'

/** One page of an agent's tasks: public history rows, or the seller's own full tasks. */
export type TaskPage = {
  tasks: PublicTaskRow[] | SellerTaskView[]
  total: number
  limit: number
  offset: number
}

/** The reads of tasks: one by id (the buyer's), and an agent's list (public history or the seller's queue). */
export function readTaskActions(context: ActionContext<AgentStore & TaskStore>) {
  const { store, config, clock } = context
  return {
    /** A task as its buyer reads it (SPEC row 10): knowing the id is the credential. */
    async getTask(agentName: string, id: string): Promise<TaskView> {
      // One store read on the polling path; only a miss reads the agent, to say which of the two is unknown.
      const task = await store.getTask(agentName, id)
      const now = clock.now()
      if (task) return toTaskView(taskAt(task, now), config, now)
      // The task read missed: the agent is read only to say which of the two is unknown, not to read the task again.
      throw taskNotFound((await requireAgent(context, agentName)).name, id)
    },

    /**
     * An agent's tasks (SPEC row 9). Without a key: the public history (default `completed`), rows without ids,
     * params, e-mails or results. With the seller's key: its full tasks as a work queue (default `all`, paid first).
     */
    async listTasks(agentName: string, apiKey: string | undefined, query: unknown): Promise<TaskPage> {
      const { status, limit, offset } = parseInput(TaskListInput, query ?? {}, 'invalid_query')
      const seller = apiKey === undefined ? null : await authenticate(context, agentName, apiKey)
      const agent = seller ?? (await requireAgent(context, agentName))
      const wanted = status ?? (seller ? 'all' : 'completed')
      const statuses = wanted === 'all' ? [...TASK_STATUSES] : [wanted]
      // The public history of deliveries reads in the order they were delivered.
      const order = seller ? 'work_queue' : wanted === 'completed' ? 'delivered' : 'history'
      const page = await store.listTasks(agent.name, { statuses, order, limit, offset })
      const now = clock.now()
      const current = page.tasks.map((task) => taskAt(task, now))
      const tasks = seller
        ? await sellerViews(context, current)
        : current.map((task) => toPublicTaskRow(task, config))
      return { tasks, total: page.total, limit, offset }
    },
  }
}
