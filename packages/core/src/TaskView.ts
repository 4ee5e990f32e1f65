import type { Address, Hex } from 'viem'
import {
  type RatingTypedData,
  type ReviewTypedData,
  ratingTypedData,
  reviewTypedData,
} from './BuyerReview.ts'
import { chainName, type MarketConfig } from './Config.ts'
import { type EscrowJobView, escrowJobView } from './EscrowJobView.ts'
import { type TaskEntryView, type TaskOutcome, toTaskEntryView } from './Job.ts'
import { amountToNumber } from './Money.ts'
import { reasonHash } from './payments/JobEscrow.ts'
import { type PayerProofTypedData, payerProofTypedData } from './payments/PayerProof.ts'
import type { BuyerDecisions } from './ports/Store.ts'
import { isRatable } from './Rating.ts'
import type { ResultReveal } from './Skill.ts'
import {
  buyerWalletOf,
  type MoneyState,
  moneyState,
  onTime,
  type PaymentMethod,
  paymentTxHash,
  type TaskRecord,
  type TaskStatus,
  taskDueAt,
  taskReviewUntil,
} from './Task.ts'
import { type NextSteps, nextSteps } from './TaskSteps.ts'

// The task on the wire: as its buyer reads it, as its seller reads it, and as a row of the public history.

/** The payment part of a task on the wire. */
export type TaskPaymentView = {
  amount: number
  currency: 'USDC'
  chain: string
  chain_id: number
  to: Address | null
  amount_base_units: string
  usdc_contract: Address
  escrow_contract: Address | null
  method: PaymentMethod | null
  tx_hash: Hex | null
  escrow_task_id: Hex | null
  paid_amount: number | null
  from: Address | null
  /**
   * While the task awaits payment on the payment chain: the EIP-712 typed data the paying wallet signs (with its
   * transaction hash as `message.txHash`) and sends as `payer_signature`. Null otherwise.
   */
  payer_proof: PayerProofTypedData | null
}

/** The whole task on the wire (SPEC "Task"), as its buyer reads it: never the buyer's e-mail. */
export type TaskView = {
  task_id: string
  agent: string
  status: TaskStatus
  skill: string
  skill_slug: string
  sla: string
  params: Record<string, unknown> | null
  buyer: string | null
  buyer_wallet: Address | null
  payment: TaskPaymentView
  next_steps: NextSteps
  /** The delivered result; under `reveal: after_acceptance` only once the task is completed (never after a rejection). */
  result_url?: string
  /**
   * Under `reveal: after_acceptance`, once delivered: keccak256 of the result URL (a job escrow's `deliverable`), so the
   * buyer can check the URL it is shown after accepting is the one delivered.
   */
  result_commitment?: Hex
  /** When the result is shown: at once (`on_delivery`) or only once completed (`after_acceptance`). */
  reveal: ResultReveal
  /** The promised delivery time in seconds (the skill's `sla_seconds` when ordered); null: none. */
  sla_seconds: number | null
  /** The delivery deadline; past it an undelivered task is `expired`. */
  due_at: string | null
  delivered_at: string | null
  /** The buyer's review window in seconds; 0: a delivery completes the task. */
  review_seconds: number
  /** Until when the buyer may accept or reject the delivery; silence past it accepts. */
  review_until: string | null
  outcome: TaskOutcome | null
  /** Refunds and disputes, oldest first. */
  records: TaskEntryView[]
  /**
   * While delivered and the buyer is known by a wallet: the EIP-712 typed data that wallet signs (message.decision
   * "accept" or "reject", message.reason as sent) to accept or reject. Null otherwise.
   */
  review: ReviewTypedData | null
  /** Where the money is: none paid, held in escrow, released to the seller, refunded to the buyer. */
  money: MoneyState
  /** The rating by the wallet that paid, once given. */
  rating: { score: number; comment: string; wallet: Address; at: string } | null
  /**
   * While the task is finished, paid on chain by a known wallet and not rated: the EIP-712 typed data that wallet signs
   * (message.score 1-5, message.comment as sent) to rate it with POST …/rating. Null otherwise.
   */
  rate: RatingTypedData | null
  /** The job on the job escrow (its terms and the calls each party may send next); null without one. */
  escrow_job: EscrowJobView | null
  created_at: string
  /** When an unpaid task expires (status `expired`); null once paid or when it never waited for payment. */
  expires_at: string | null
  paid_at: string | null
  completed_at: string | null
}

/** How the buyer wallet of a task decided deliveries across the market (Store.buyerDecisions), for its seller. */
export type BuyerDecisionsView = { wallet: Address; accepted: number; rejected: number }

/**
 * A task as its seller reads it in the work queue: everything, the buyer's e-mail included, and its buyer wallet's
 * record of signed acceptances and rejections across the market (null without a buyer wallet).
 */
export type SellerTaskView = TaskView & {
  buyer_email: string | null
  buyer_decisions: BuyerDecisionsView | null
}

/** A row of the public transaction history: no id, params, e-mail or result. */
export type PublicTaskRow = {
  skill: string
  status: TaskStatus
  amount: number
  currency: 'USDC'
  tx_hash: Hex | null
  /** The chain `tx_hash` is on (the payment chain, or the MPP network's); null without a hash. */
  chain_id: number | null
  created_at: string
  paid_at: string | null
  completed_at: string | null
  /** Whether it was delivered by its deadline; null while that is not known. */
  on_time: boolean | null
  /** How many refunds and disputes it has. */
  refunds: number
  disputes: number
}

/** Where a task is paid: the MPP network for machine payments, else the payment chain. */
function paymentNetwork(method: PaymentMethod | null, config: MarketConfig) {
  if (method === 'mpp') {
    const { name, chainId, currency } = config.mppNetwork
    return { chain: name, chain_id: chainId, usdc_contract: currency }
  }
  const { chainId, usdcContract } = config.chain
  return { chain: chainName(chainId), chain_id: chainId, usdc_contract: usdcContract }
}

const iso = (date: Date | null) => date?.toISOString() ?? null

/** The states in which a task has a result to show (to its seller always; to others as its `reveal` says). */
const SHOWS_RESULT: readonly TaskStatus[] = ['delivered', 'completed', 'rejected']

/** The commitment to a result: keccak256 of its URL, what the job escrow's submit records as `deliverable`. */
export function resultCommitment(resultUrl: string): Hex {
  return reasonHash(resultUrl)
}

/**
 * The result fields of a task as anyone but its seller reads them: a result revealed after acceptance shows only its
 * commitment until the task is completed (accepted, or by silence), and never its URL after a rejection.
 */
function resultFields(task: TaskRecord): Pick<TaskView, 'result_url' | 'result_commitment'> {
  if (!SHOWS_RESULT.includes(task.status) || !task.resultUrl) return NO_RESULT
  if (task.reveal === 'on_delivery') return { result_url: task.resultUrl }
  const result_commitment = resultCommitment(task.resultUrl)
  return task.status === 'completed'
    ? { result_url: task.resultUrl, result_commitment }
    : { result_commitment }
}

/** The result fields of a task that shows none (most tasks polled: not yet delivered). */
const NO_RESULT: Pick<TaskView, 'result_url' | 'result_commitment'> = Object.freeze({})

/** True while a task waits for a payment on the payment chain. */
const awaitsChainPayment = (task: TaskRecord) => task.status === 'pending_payment' && task.payTo !== null

/** The task as its buyer reads it (SPEC row 10) at `now` (the job escrow's offered funding starts from it). */
export function toTaskView(task: TaskRecord, config: MarketConfig, now = task.createdAt): TaskView {
  const paid = task.payment
  // Every field written in its wire order into one literal: each GET of a task shapes one, so no part is made as an
  // object of its own and spread (bench/CHANGES.md, issue 41).
  const network = paymentNetwork(paid?.method ?? null, config)
  const view: TaskView = {
    task_id: task.id,
    agent: task.agentName,
    status: task.status,
    skill: task.skillName,
    skill_slug: task.skillSlug,
    sla: task.sla,
    params: task.params,
    buyer: task.buyer,
    buyer_wallet: task.buyerWallet,
    payment: {
      amount: amountToNumber(task.priceBaseUnits),
      currency: 'USDC',
      chain: network.chain,
      chain_id: network.chain_id,
      usdc_contract: network.usdc_contract,
      to: task.payTo,
      amount_base_units: task.priceBaseUnits.toString(),
      escrow_contract: config.chain.escrowContract,
      method: paid?.method ?? null,
      tx_hash: paymentTxHash(paid),
      escrow_task_id: paid?.escrowTaskId ?? null,
      paid_amount: paid ? amountToNumber(paid.amountBaseUnits) : null,
      from: paid?.from ?? null,
      payer_proof: awaitsChainPayment(task)
        ? payerProofTypedData(config.chain.chainId, {
            market: config.baseUrl,
            agent: task.agentName,
            task: task.id,
            txHash: null,
          })
        : null,
    },
    next_steps: nextSteps(task, config),
    created_at: task.createdAt.toISOString(),
    expires_at: task.status === 'pending_payment' || task.status === 'expired' ? iso(task.expiresAt) : null,
    paid_at: iso(paid?.at ?? null),
    completed_at: iso(task.completedAt),
    sla_seconds: task.slaSeconds,
    due_at: iso(taskDueAt(task)),
    delivered_at: iso(task.deliveredAt),
    review_seconds: task.reviewSeconds,
    reveal: task.reveal,
    review_until: iso(taskReviewUntil(task)),
    outcome: task.outcome,
    records: task.entries.map(toTaskEntryView),
    review:
      task.status === 'delivered' && buyerWalletOf(task)
        ? reviewTypedData(config.chain.chainId, {
            market: config.baseUrl,
            agent: task.agentName,
            task: task.id,
            decision: '',
            reason: '',
          })
        : null,
    money: moneyState(task),
    rating: task.rating && { ...task.rating, at: task.rating.at.toISOString() },
    rate:
      !task.rating && isRatable(task)
        ? ratingTypedData(config.chain.chainId, {
            market: config.baseUrl,
            agent: task.agentName,
            task: task.id,
            score: 0,
            comment: '',
          })
        : null,
    escrow_job: escrowJobView(task, config, now),
  }
  const result = resultFields(task)
  return result === NO_RESULT ? view : Object.assign(view, result)
}

/**
 * The task as its seller reads it, with its buyer wallet's decisions among `decisions` (Store.buyerDecisions). The
 * seller delivered the result, so it always reads its `result_url`, whatever the task's `reveal`.
 */
export function toSellerTaskView(
  task: TaskRecord,
  config: MarketConfig,
  decisions: readonly BuyerDecisions[],
): SellerTaskView {
  const wallet = buyerWalletOf(task)
  const known = wallet && decisions.find((count) => count.wallet === wallet.toLowerCase())
  const view = toTaskView(task, config)
  if (SHOWS_RESULT.includes(task.status) && task.resultUrl) view.result_url = task.resultUrl
  return {
    ...view,
    buyer_email: task.buyerEmail,
    buyer_decisions: wallet
      ? { wallet, accepted: known ? known.accepted : 0, rejected: known ? known.rejected : 0 }
      : null,
  }
}

/** The public history row of a task. */
export function toPublicTaskRow(task: TaskRecord, config: MarketConfig): PublicTaskRow {
  const txHash = paymentTxHash(task.payment)
  return {
    skill: task.skillName,
    status: task.status,
    amount: amountToNumber(task.priceBaseUnits),
    currency: 'USDC',
    tx_hash: txHash,
    chain_id: txHash ? paymentNetwork(task.payment?.method ?? null, config).chain_id : null,
    created_at: task.createdAt.toISOString(),
    paid_at: iso(task.payment?.at ?? null),
    completed_at: iso(task.completedAt),
    on_time: onTime(task),
    refunds: task.entries.filter((entry) => entry.kind === 'refund').length,
    disputes: task.entries.filter((entry) => entry.kind === 'dispute').length,
  }
}
