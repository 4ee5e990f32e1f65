import { nameKey } from './Agent.ts'
import type { TaskRecord } from './Task.ts'

// The background re-checks of a payment submitted before it was final: when, how often, and whose turn.

/** Delay before the next background re-check of a pending payment: 5 s doubling to 5 min. */
export function recheckDelayMs(attempts: number): number {
  return Math.min(5_000 * 2 ** Math.min(attempts, 10), 300_000)
}

/** A payment is re-checked in the background at most this many times (about 40 minutes with the back-off above). */
export const MAX_RECHECKS = 12
/** ...and only this many times (about 2.5 minutes) while the chain has never shown the transaction mined. */
export const MAX_UNMINED_RECHECKS = 5
/** The most tasks one client may have re-checked in the background at once; past it, it calls verify-payment. */
export const MAX_RECHECKS_PER_CLIENT = 10

/**
 * Whose re-check it is and where from, for the fair claim (FairQueue.ts): the seller (its name key) is the tenant,
 * the client that ordered the endpoint, or the task itself when the host named no client (no client quota then).
 */
export function recheckQueueKeys(task: Pick<TaskRecord, 'id' | 'agentName' | 'clientKey'>): {
  tenant: string
  endpoint: string
} {
  return { tenant: nameKey(task.agentName), endpoint: task.clientKey || `task:${task.id}` }
}
