import type { Address, Hex } from 'viem'
import type { AgentRecord } from './Agent.ts'
import { amountToNumber } from './Money.ts'

/** The least time to deliver that a funding must leave a skill without an SLA (seconds); an escrow deposit's too. */
export const DEFAULT_JOB_SECONDS = 24 * 60 * 60

/**
 * A paid task as a job (docs/jobs.md): the seller delivers by `due_at`, the buyer accepts or rejects the delivery
 * within the review window, silence past it accepts, and a job not delivered by its deadline ends `expired`.
 */

/**
 * How a job ended: delivered (completed at once: no review window), accepted by its buyer, accepted by silence past the
 * review window, rejected, or not delivered in time.
 */
export const TASK_OUTCOMES = ['delivered', 'accepted', 'accepted_by_silence', 'rejected', 'late'] as const
/** A job's ending. */
export type TaskOutcome = (typeof TASK_OUTCOMES)[number]

/** Kinds of the records a task keeps of its money's disputes. */
export const TASK_ENTRY_KINDS = ['dispute', 'refund'] as const
/** Who made a record: the buyer, the seller, the escrow's evaluator, the marketplace (a deadline), or the chain. */
export const TASK_ENTRY_AUTHORS = ['buyer', 'seller', 'evaluator', 'market', 'chain'] as const

/** A refund or a dispute, as the task keeps it (never edited, only appended). */
export type TaskEntry = {
  kind: (typeof TASK_ENTRY_KINDS)[number]
  by: (typeof TASK_ENTRY_AUTHORS)[number]
  /** The wallet that acted, when one did. */
  wallet: Address | null
  at: Date
  /** The money it concerns (base units), null when none moved. */
  amountBaseUnits: bigint | null
  reason: string
  txHash: Hex | null
}

/** The money the refund records among `entries` gave back (base units). */
export function refundedBaseUnits(entries: readonly TaskEntry[]): bigint {
  let sum = 0n
  for (const entry of entries) if (entry.kind === 'refund') sum += entry.amountBaseUnits ?? 0n
  return sum
}

/** A record on the wire. */
export type TaskEntryView = {
  kind: TaskEntry['kind']
  by: TaskEntry['by']
  wallet: Address | null
  at: string
  amount: number | null
  reason: string
  tx_hash: Hex | null
}

/** An agent's ratings on its public profile: how many, their mean, and from how many buyer wallets. */
export type RatingSummaryView = { count: number; average: number | null; buyers: number }

/** The rating summary of an agent from its counts. */
export function ratingSummaryView(
  agent: Pick<AgentRecord, 'ratingCount' | 'ratingSum' | 'ratedBuyers'>,
): RatingSummaryView {
  const average =
    agent.ratingCount === 0 ? null : Math.round((agent.ratingSum / agent.ratingCount) * 100) / 100
  return { count: agent.ratingCount, average, buyers: agent.ratedBuyers }
}

/** An agent's record as a seller of jobs, on its public profile. */
export type DeliveryRecordView = {
  completed: number
  onTime: number
  late: number
  /** onTime / (onTime + late); null before any job was delivered or missed. */
  onTimeRatio: number | null
  disputes: number
  refunds: number
}

/** The delivery record of an agent from its counts. */
export function deliveryRecordView(
  agent: Pick<
    AgentRecord,
    'completedTasks' | 'onTimeTasks' | 'lateTasks' | 'disputedTasks' | 'refundedTasks'
  >,
): DeliveryRecordView {
  const judged = agent.onTimeTasks + agent.lateTasks
  return {
    completed: agent.completedTasks,
    onTime: agent.onTimeTasks,
    late: agent.lateTasks,
    onTimeRatio: judged === 0 ? null : Math.round((agent.onTimeTasks / judged) * 1000) / 1000,
    disputes: agent.disputedTasks,
    refunds: agent.refundedTasks,
  }
}

/** A rating of a task by the wallet that paid it. */
export type TaskRating = {
  /** 1 to 5 stars. */
  score: number
  comment: string
  wallet: Address
  at: Date
}

/** The lowest and highest scores. */
export const RATING_RANGE = { min: 1, max: 5 } as const

/** The longest reason a buyer or seller may give. */
export const MAX_REASON_LENGTH = 500
/** The shortest and longest reason of a rejection: a dispute is recorded with its reason, never without. */
export const DISPUTE_REASON_LENGTH = { min: 1, max: 1000 } as const

/** The delivery deadline of a task paid at `paidAt` under an SLA of `slaSeconds` (none without one). */
export function dueAtOf(slaSeconds: number | null, paidAt: Date): Date | null {
  return slaSeconds === null ? null : new Date(paidAt.getTime() + slaSeconds * 1000)
}

/** The end of the buyer's review of a delivery made at `deliveredAt`. */
export function reviewUntilOf(reviewSeconds: number, deliveredAt: Date): Date {
  return new Date(deliveredAt.getTime() + reviewSeconds * 1000)
}

/** The wire form of a record. */
export function toTaskEntryView(entry: TaskEntry): TaskEntryView {
  return {
    kind: entry.kind,
    by: entry.by,
    wallet: entry.wallet,
    at: entry.at.toISOString(),
    amount: entry.amountBaseUnits === null ? null : amountToNumber(entry.amountBaseUnits),
    reason: entry.reason,
    tx_hash: entry.txHash,
  }
}

/** A record as JSON text for a store (amounts as decimal strings). */
export function entryToJson(entry: TaskEntry): Record<string, unknown> {
  return { ...entry, at: entry.at.getTime(), amountBaseUnits: entry.amountBaseUnits?.toString() ?? null }
}

/** A record read back from its JSON form. */
export function entryFromJson(json: Record<string, unknown>): TaskEntry {
  return {
    kind: json.kind as TaskEntry['kind'],
    by: json.by as TaskEntry['by'],
    wallet: (json.wallet as Address | null) ?? null,
    at: new Date(json.at as number),
    amountBaseUnits: json.amountBaseUnits == null ? null : BigInt(json.amountBaseUnits as string),
    reason: String(json.reason ?? ''),
    txHash: (json.txHash as Hex | null) ?? null,
  }
}
