import type { Address, Hex } from 'viem'
import type { MarketConfig } from './Config.ts'
import { DEFAULT_JOB_SECONDS } from './Job.ts'
import { fundingCalls, type JobCall, jobCall, jobStepData } from './payments/JobEscrow.ts'
import type { TaskRecord } from './Task.ts'

/** A task's job on the job escrow, on the wire: its terms and the transactions each party may send next. */
export type EscrowJobView = {
  contract: Address
  /** keccak256 of the task id: the fund call's jobId. */
  job_id: Hex
  /** The job's key on the contract once funded (every later call names it). */
  key: Hex | null
  client: Address | null
  evaluator: Address | null
  deliver_by: string | null
  review_seconds: number
  calls: JobCall[]
}

/** Seconds a proposed funding leaves for the buyer to fund and the market to see it, beyond the SLA. */
export const FUNDING_SLACK_SECONDS = 3600

const iso = (date: Date) => date.toISOString()
/** The calls of each stage: fund while unpaid; submit or refund while funded; decide or claim while delivered. */
function callsOf(task: TaskRecord, config: MarketConfig, contract: Address, now: Date): JobCall[] {
  const job = task.payment?.job
  if (task.status === 'pending_payment' && task.jobId && task.payTo) {
    const seconds = (task.slaSeconds ?? DEFAULT_JOB_SECONDS) + FUNDING_SLACK_SECONDS
    return fundingCalls(config.chain.usdcContract, contract, {
      jobId: task.jobId,
      seller: task.payTo,
      amount: task.priceBaseUnits,
      deliverBy: BigInt(Math.floor(now.getTime() / 1000) + seconds),
      reviewSeconds: task.reviewSeconds,
    })
  }
  if (!job) return []
  if (task.status === 'paid')
    return [
      jobCall('submit', 'seller', contract, jobStepData('submit', job.key, task.resultUrl ?? ''), {
        notAfter: job.deliverBy,
      }),
      jobCall('claimRefund', 'anyone', contract, jobStepData('claimRefund', job.key), {
        notBefore: job.deliverBy,
      }),
    ]
  if (task.status === 'delivered' && task.deliveredAt) {
    const reviewUntil = new Date(task.deliveredAt.getTime() + job.reviewSeconds * 1000)
    return [
      jobCall('complete', 'evaluator', contract, jobStepData('complete', job.key), { notAfter: reviewUntil }),
      jobCall('reject', 'evaluator', contract, jobStepData('reject', job.key), { notAfter: reviewUntil }),
      jobCall('claimPayment', 'anyone', contract, jobStepData('claimPayment', job.key), {
        notBefore: reviewUntil,
      }),
    ]
  }
  return []
}

/**
 * The job escrow part of a task view at `now`; null when the task has no job there (and none can be funded). The
 * offered funding's deadline leaves the SLA and an hour for the buyer to send it (FUNDING_SLACK_SECONDS).
 */
export function escrowJobView(task: TaskRecord, config: MarketConfig, now: Date): EscrowJobView | null {
  const job = task.payment?.job ?? null
  const contract = job?.contract ?? config.chain.jobEscrowContract ?? null
  if (!contract || !task.jobId || (!job && task.status !== 'pending_payment')) return null
  return {
    contract,
    job_id: task.jobId,
    key: job?.key ?? null,
    client: job?.client ?? null,
    evaluator: job?.evaluator ?? null,
    deliver_by: job ? iso(job.deliverBy) : null,
    review_seconds: job?.reviewSeconds ?? task.reviewSeconds,
    calls: callsOf(task, config, contract, now),
  }
}
