import type { Address, Hex } from 'viem'
import {
  DEFAULT_JOB_SECONDS,
  dueAtOf,
  reviewUntilOf,
  type TaskEntry,
  type TaskOutcome,
  type TaskRating,
} from './Job.ts'
import type { EscrowJob } from './payments/JobEscrow.ts'
import type { ResultReveal, SkillRecord } from './Skill.ts'

// A task as the store keeps it, its states, and how time moves them. Its input is TaskInput.ts, the steps a buyer
// takes TaskSteps.ts, its documents TaskView.ts, the background re-checks of its payment PaymentRechecks.ts.

/**
 * The states of a task: SPEC's three, plus `delivered` (awaiting the buyer's review), `rejected` (the buyer refused
 * the delivery) and `expired` (unpaid past `expires_at`, or paid and not delivered by `due_at`). docs/jobs.md.
 */
export const TASK_STATUSES = [
  'pending_payment',
  'paid',
  'delivered',
  'completed',
  'rejected',
  'expired',
] as const
/** A task's state. */
export type TaskStatus = (typeof TASK_STATUSES)[number]

/** How a task's payment was made. */
export type PaymentMethod = 'free' | 'transfer' | 'escrow' | 'mpp' | 'x402' | 'job_escrow'

/** A payment the chain confirmed, as the task keeps it. */
export type TaskPayment = {
  method: PaymentMethod
  txHash: Hex | null
  escrowTaskId: Hex | null
  amountBaseUnits: bigint
  from: Address | null
  at: Date
  /** A job funded in the job escrow: its key and terms (the chain decides its delivery, review and refund). */
  job?: EscrowJob | null
}

/**
 * A transaction hash submitted at creation that was not final yet: re-checked in the background, with the payer's
 * signature sent beside it (judged once the chain shows who paid).
 */
export type PendingCheck = { txHash: Hex; signature: Hex | null; attempts: number; nextAt: Date }

/** The first answer to a create request with an Idempotency-Key, replayed to retries with the same body. */
export type IdempotentAnswer = { key: string; fingerprint: string; status: number; body: unknown }

/** A task as the store keeps it. */
export type TaskRecord = {
  id: string
  agentName: string
  skillName: string
  skillSlug: string
  sla: string
  status: TaskStatus
  priceBaseUnits: bigint
  /** The seller's wallet at creation: what the buyer was told to pay. Null for free skills. */
  payTo: Address | null
  params: Record<string, unknown> | null
  buyer: string | null
  /**
   * The buyer agent's name key when the order carried that agent's API key: only such orders count on its spending
   * budget (anyone may name any agent as buyer). Absent or null otherwise.
   */
  buyerKey?: string | null
  buyerEmail: string | null
  buyerWallet: Address | null
  payment: TaskPayment | null
  pendingCheck: PendingCheck | null
  resultUrl: string | null
  idempotency: IdempotentAnswer | null
  /** A digest of the client that ordered: the scope of its Idempotency-Key and of its re-check budget. */
  clientKey: string
  /** When the task stops waiting for payment (then `expired`); null when it never waited. */
  expiresAt: Date | null
  createdAt: Date
  completedAt: Date | null
  /** The skill's promised delivery time when ordered (seconds); null: no deadline. */
  slaSeconds: number | null
  /** The buyer's review window when ordered (seconds); 0: a delivery completes the task. */
  reviewSeconds: number
  /** When its result is shown to anyone but its seller (the skill's `reveal` when ordered). */
  reveal: ResultReveal
  /** When the seller delivered (the deadline and the end of the review follow: dueAtOf, reviewUntilOf). */
  deliveredAt: Date | null
  /** How the job ended; null while it runs. */
  outcome: TaskOutcome | null
  /** Its refunds and disputes, oldest first. */
  entries: TaskEntry[]
  /** Its job id on the job escrow (jobIdOf): set on paid orders while the market takes escrow jobs. */
  jobId: Hex | null
  /** The rating by the wallet that paid it, once given. */
  rating: TaskRating | null
}

/** How long an unpaid task waits for its payment before it is `expired`. */
export const UNPAID_TASK_TTL_MS = 24 * 60 * 60 * 1000
/** Expired tasks are deleted this long after they expired (their ids then answer 404). */
export const EXPIRED_TASK_RETENTION_MS = 7 * 24 * 60 * 60 * 1000
/** How an order names a skill, as its slug or name are compared: trimmed, lower case. */
export const skillKey = (nameOrSlug: string) => nameOrSlug.trim().toLowerCase()

/** The skill of `agentSkills` named by `nameOrSlug` (its slug, or its name without regard to case). */
export function findSkill(agentSkills: readonly SkillRecord[], nameOrSlug: string): SkillRecord | undefined {
  const wanted = skillKey(nameOrSlug)
  return (
    agentSkills.find((skill) => skill.slug === wanted) ??
    agentSkills.find((skill) => skill.name.toLowerCase() === wanted)
  )
}

/**
 * The task as it stands at `now` by time alone (the sweep stores it later): awaiting payment past `expiresAt`, or paid
 * and undelivered past `dueAt`, it is `expired`; delivered past `reviewUntil`, the buyer's silence accepted it.
 */
export function taskAt(task: TaskRecord, now: Date): TaskRecord {
  // A job in escrow moves by the chain's events only (the job follower), never by the clock.
  if (task.payment?.job) return task
  const past = (when: Date | null) => when !== null && when <= now
  // A payment sent in time and still under re-check holds its task until the re-check decides (paid or dropped).
  if (task.status === 'pending_payment' && past(task.expiresAt) && !task.pendingCheck)
    return { ...task, status: 'expired', pendingCheck: null }
  if (task.status === 'paid' && past(taskDueAt(task))) return { ...task, status: 'expired', outcome: 'late' }
  const reviewUntil = taskReviewUntil(task)
  if (task.status === 'delivered' && past(reviewUntil))
    return { ...task, status: 'completed', outcome: 'accepted_by_silence', completedAt: reviewUntil }
  return task
}

/**
 * A paid task's delivery deadline: the job escrow's for a job funded there, else payment time + its SLA; null while
 * unpaid or without an SLA.
 */
export function taskDueAt(task: Pick<TaskRecord, 'slaSeconds' | 'payment'>): Date | null {
  if (task.payment?.job) return task.payment.job.deliverBy
  return task.payment ? dueAtOf(task.slaSeconds, task.payment.at) : null
}

/**
 * True when the seller had its whole SLA (24 hours without one for a job) between the market marking the task paid and
 * its deadline. A task paid outside the escrow is due its SLA after payment, always; a job's deadline is its funding's.
 */
export function hadWholeSla(task: Pick<TaskRecord, 'slaSeconds' | 'payment'>): boolean {
  const payment = task.payment
  if (!payment?.job) return true
  const seconds = task.slaSeconds ?? DEFAULT_JOB_SECONDS
  return payment.job.deliverBy.getTime() - payment.at.getTime() >= seconds * 1000
}

/** The end of the buyer's review of a delivery; null before one. */
export function taskReviewUntil(
  task: Pick<TaskRecord, 'reviewSeconds' | 'deliveredAt' | 'payment'>,
): Date | null {
  const seconds = task.payment?.job?.reviewSeconds ?? task.reviewSeconds
  return task.deliveredAt ? reviewUntilOf(seconds, task.deliveredAt) : null
}

/** The transaction that paid a task: its payment's, or a job's funding (which claims its key, not its hash). */
export function paymentTxHash(payment: TaskPayment | null): Hex | null {
  return payment?.txHash ?? payment?.job?.fundingTx ?? null
}

/** The wallet that speaks for a task's buyer: the payer the chain showed, else the wallet the order named. */
export function buyerWalletOf(task: Pick<TaskRecord, 'payment' | 'buyerWallet'>): Address | null {
  return task.payment?.from ?? task.buyerWallet
}

/** Whether a task was delivered by its deadline: null until delivered or overdue. */
export function onTime(task: TaskRecord): boolean | null {
  if (task.outcome === 'late') return false
  if (!task.deliveredAt) return null
  const due = taskDueAt(task)
  return due === null || task.deliveredAt <= due
}

/** Where a task's money is: none paid, held in escrow, released to the seller, or refunded to the buyer. */
export type MoneyState = 'none' | 'held' | 'released' | 'refunded'

/** The money state of a task. */
export function moneyState(task: TaskRecord): MoneyState {
  const paid = task.payment
  if (!paid || paid.amountBaseUnits === 0n) return 'none'
  if (paid.job) {
    if (task.status === 'completed') return 'released'
    if (task.status === 'rejected' || task.status === 'expired') return 'refunded'
    return 'held'
  }
  const refunded = task.entries.reduce(
    (sum, entry) => (entry.kind === 'refund' ? sum + (entry.amountBaseUnits ?? 0n) : sum),
    0n,
  )
  return refunded >= paid.amountBaseUnits ? 'refunded' : 'released'
}
