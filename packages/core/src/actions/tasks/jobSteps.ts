import type { Address } from 'viem'
import type { AgentRecord } from '../../Agent.ts'
import { feedEvents } from '../../events.ts'
import type { TaskEntry } from '../../Job.ts'
import type { AgentStore, JobCounts, TaskChange, UserStore } from '../../ports/Store.ts'
import { hadWholeSla, type TaskRecord, taskAt, taskReviewUntil } from '../../Task.ts'
import { creditedBuyer } from '../../Trust.ts'
import type { ActionContext } from '../context.ts'

/**
 * The wallets of an agent's owner (proven by signature when paired) that, with the wallet a task paid, are the
 * seller's own. Not its current walletAddress: anyone holding the key may set it to any address, unproven.
 */
export async function ownerWallets(
  { store }: Pick<ActionContext<UserStore>, 'store'>,
  agent: AgentRecord,
): Promise<Address[]> {
  if (!agent.ownerUsername || !agent.ownerProven) return []
  const owner = await store.getUser(agent.ownerUsername)
  return owner ? [owner.walletAddress] : []
}

/**
 * The step time alone decided for a task as stored (taskAt shows it to reads already): a paid task past its `due_at`
 * is late, a delivery past its `review_until` accepted by silence; null when time decided nothing.
 */
export async function stepOfTime(
  context: Pick<ActionContext<AgentStore & UserStore>, 'store'>,
  task: TaskRecord,
  now: Date,
): Promise<TaskChange | null> {
  if (taskAt(task, now).status === task.status) return null
  if (task.status !== 'paid') return jobSteps.acceptance(task, now, true)
  const seller = await context.store.getAgent(task.agentName)
  return jobSteps.lateness(task, now, seller ? await ownerWallets(context, seller) : [])
}

/**
 * What a job counts toward its seller's on-time ratio: only jobs paid on chain by another wallet than the seller's
 * own (the wallet the task paid, its owner's: `ownWallets`), so free orders and payments to itself never dilute its
 * late jobs; and a late job only when the seller had its whole SLA after the market marked it paid (hadWholeSla).
 */
export function reliabilityCounts(
  task: TaskRecord,
  count: 'onTime' | 'late',
  ownWallets: readonly Address[],
): JobCounts {
  if (count === 'late' && !hadWholeSla(task)) return {}
  return creditedBuyer(task, ownWallets) ? { [count]: true } : {}
}

/** What a buyer's rejection counts on its seller: a dispute only over money paid (a free task's is its record alone). */
export function disputeCounts(task: TaskRecord): JobCounts {
  return task.payment && task.payment.amountBaseUnits > 0n ? { dispute: true } : {}
}

/**
 * The steps of a job (docs/jobs.md) as store changes: each names the states it starts from, so the store applies it as
 * one compare-and-set, and the same step taken twice (two requests, two sweeps) lands once.
 */
export const jobSteps = {
  /**
   * The seller delivers: `completed` at once when the task has no review window, else `delivered` for review.
   * `ownWallets`: its owner's (ownerWallets), which count toward no on-time ratio.
   */
  delivery(task: TaskRecord, resultUrl: string, at: Date, ownWallets: readonly Address[] = []): TaskChange {
    const base = { id: task.id, from: ['paid'] as const, at, resultUrl, deliveredAt: at }
    if (task.reviewSeconds === 0)
      return {
        ...base,
        to: 'completed',
        completedAt: at,
        outcome: 'delivered',
        counts: { completed: true, ...reliabilityCounts(task, 'onTime', ownWallets) },
        events: [feedEvents.taskCompleted(task, at, 'delivered')],
      }
    return {
      ...base,
      to: 'delivered',
      counts: reliabilityCounts(task, 'onTime', ownWallets),
      events: [feedEvents.taskDelivered(task, at)],
    }
  },

  /** The buyer accepts the delivery, or its silence did once the review window closed (completed at its end). */
  acceptance(task: TaskRecord, at: Date, bySilence: boolean): TaskChange {
    const completedAt = bySilence ? (taskReviewUntil(task) ?? at) : at
    const outcome = bySilence ? 'accepted_by_silence' : 'accepted'
    return {
      id: task.id,
      from: ['delivered'],
      to: 'completed',
      at,
      completedAt,
      outcome,
      counts: { completed: true },
      events: [feedEvents.taskCompleted(task, completedAt, outcome)],
    }
  },

  /** The buyer rejects the delivery with a reason: a dispute over what it paid. */
  rejection(task: TaskRecord, at: Date, wallet: Address, reason: string): TaskChange {
    const entry: TaskEntry = {
      kind: 'dispute',
      by: 'buyer',
      wallet,
      at,
      amountBaseUnits: task.payment?.amountBaseUnits ?? null,
      reason,
      txHash: null,
    }
    return {
      id: task.id,
      from: ['delivered'],
      to: 'rejected',
      at,
      outcome: 'rejected',
      entries: [entry],
      counts: disputeCounts(task),
      events: [feedEvents.taskRejected(task, at)],
    }
  },

  /** A paid task passed its deadline undelivered: `expired`, late, its buyer owed a refund. */
  lateness(task: TaskRecord, at: Date, ownWallets: readonly Address[] = []): TaskChange {
    return {
      id: task.id,
      from: ['paid'],
      to: 'expired',
      at,
      outcome: 'late',
      counts: reliabilityCounts(task, 'late', ownWallets),
      events: [feedEvents.taskLate(task, at)],
    }
  },

  /** A refund the chain shows, recorded on a task in a final state (which it keeps). */
  refund(task: TaskRecord, entry: TaskEntry): TaskChange {
    return {
      id: task.id,
      from: [task.status],
      to: task.status,
      at: entry.at,
      entries: [entry],
      counts: { refund: true },
      events: [feedEvents.taskRefunded(task, entry.at, entry.amountBaseUnits ?? 0n, entry.txHash)],
    }
  },
}
