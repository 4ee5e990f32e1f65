import type { KvStore } from '../../ports/Store.ts'
import type { ActionContext } from '../context.ts'

/** The most tasks one thread holds; an order past it starts a new thread (nothing is ever pushed out). */
export const THREAD_TASK_LIMIT = 100

/** A task as a thread lists it: its seller and id. */
export type ThreadTask = { agent: string; id: string }

/** A thread as kept: the interface it belongs to (an agent's name key, or '' for the marketplace's) and its tasks. */
type ThreadRecord = { scope: string; tasks: ThreadTask[] }

const threadKey = (thread: string) => `thread:${thread}`
const taskKey = (id: string) => `thread-of:${id}`

const recordOf = (value: unknown): ThreadRecord | null => {
  const record = value as Partial<ThreadRecord> | null
  return record && typeof record.scope === 'string' && Array.isArray(record.tasks)
    ? { scope: record.scope, tasks: record.tasks }
    : null
}

/**
 * Threads: the orders a buyer placed in one conversation (A2A's `contextId`), so a protocol that groups tasks can
 * list them again. A thread id is a random, server-issued capability of the buyer who opened it, and a thread belongs
 * to the one interface it was opened on (`scope`: an agent's, or the marketplace's). The A2A handler shows a thread's
 * id only to a request that presented it (a task id, which the seller knows too, never reveals it), so a seller never
 * learns a thread, lists its other sellers' orders or adds to it.
 */
export function threadActions({ store, random }: ActionContext<KvStore>) {
  return {
    /** A new thread id (128 random bits, hex). */
    newThread(): string {
      return [...random.bytes(16)].map((byte) => byte.toString(16).padStart(2, '0')).join('')
    },

    /** The scope a thread was opened in, or null for a thread never issued here. */
    async threadScope(thread: string): Promise<string | null> {
      return recordOf(await store.kvGet(threadKey(thread)))?.scope ?? null
    },

    /**
     * Adds a task to a thread of `scope` (opening it on first use); false, changing nothing, when the thread is of
     * another scope or full (the caller opens a new one).
     */
    async addToThread(thread: string, scope: string, task: ThreadTask): Promise<boolean> {
      const added = await store.kvUpdate(threadKey(thread), (current) => {
        const record = recordOf(current) ?? { scope, tasks: [] }
        if (record.scope !== scope || record.tasks.length >= THREAD_TASK_LIMIT)
          return { op: 'noop', result: false }
        return { op: 'set', value: { scope, tasks: [...record.tasks, task] }, result: true }
      })
      if (added) await store.kvPut(taskKey(task.id), { thread, agent: task.agent, scope })
      return added
    },

    /** The thread of a task, its seller and the thread's scope, or null when it was ordered outside any thread. */
    async threadOf(id: string): Promise<{ thread: string; agent: string; scope: string } | null> {
      const found = (await store.kvGet(taskKey(id))) as {
        thread?: string
        agent?: string
        scope?: string
      } | null
      return found?.thread && found.agent
        ? { thread: found.thread, agent: found.agent, scope: found.scope ?? '' }
        : null
    },

    /** The tasks of a thread of `scope`, oldest first (empty for an unknown thread or one of another scope). */
    async threadTasks(thread: string, scope: string): Promise<ThreadTask[]> {
      const record = recordOf(await store.kvGet(threadKey(thread)))
      return record?.scope === scope ? record.tasks : []
    },
  }
}
