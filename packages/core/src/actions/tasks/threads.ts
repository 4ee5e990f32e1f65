import type { ActionContext } from '../context.ts'

/** The most tasks one thread lists; older ones stay readable by id. */
export const THREAD_TASK_LIMIT = 100

/** A task as a thread lists it: its seller and id. */
export type ThreadTask = { agent: string; id: string }

const threadKey = (thread: string) => `thread:${thread}`
const taskKey = (id: string) => `thread-of:${id}`

/**
 * Threads: the orders a buyer placed in one conversation (A2A's `contextId`), so a protocol that groups tasks can
 * list them again. A thread id is a random, server-issued capability: knowing it is what lets a client list it.
 */
export function threadActions({ store, random }: ActionContext) {
  return {
    /** A new thread id (128 random bits, hex). */
    newThread(): string {
      return [...random.bytes(16)].map((byte) => byte.toString(16).padStart(2, '0')).join('')
    },

    /** True when `thread` was issued here (it has tasks). */
    async threadExists(thread: string): Promise<boolean> {
      return (await store.kvGet(threadKey(thread))) !== null
    },

    /** Adds a task to a thread (newest last, at most THREAD_TASK_LIMIT kept) and records its thread. */
    async addToThread(thread: string, task: ThreadTask): Promise<void> {
      await store.kvPut(taskKey(task.id), { thread, agent: task.agent })
      await store.kvUpdate(threadKey(thread), (current) => {
        const tasks = Array.isArray(current) ? (current as ThreadTask[]) : []
        return { op: 'set', value: [...tasks, task].slice(-THREAD_TASK_LIMIT), result: undefined }
      })
    },

    /** The thread of a task and its seller, or null when it was ordered outside any thread. */
    async threadOf(id: string): Promise<{ thread: string; agent: string } | null> {
      const found = (await store.kvGet(taskKey(id))) as { thread?: string; agent?: string } | null
      return found?.thread && found.agent ? { thread: found.thread, agent: found.agent } : null
    },

    /** The tasks of a thread, oldest first (empty for an unknown thread). */
    async threadTasks(thread: string): Promise<ThreadTask[]> {
      const tasks = await store.kvGet(threadKey(thread))
      return Array.isArray(tasks) ? (tasks as ThreadTask[]) : []
    },
  }
}
