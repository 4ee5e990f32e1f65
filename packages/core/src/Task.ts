import * as v from 'valibot'
import { type Address, type Hex, zeroAddress } from 'viem'
import { AGENT_NAME_PATTERN, nameKey } from './Agent.ts'
import {
  type RatingTypedData,
  type ReviewTypedData,
  ratingTypedData,
  reviewTypedData,
} from './BuyerReview.ts'
import { chainName, type MarketConfig } from './Config.ts'
import {
  DEFAULT_JOB_SECONDS,
  type EscrowJobView,
  escrowJobView,
  type MoneyState,
  moneyState,
} from './EscrowJobView.ts'
import {
  DISPUTE_REASON_LENGTH,
  dueAtOf,
  MAX_REASON_LENGTH,
  reviewUntilOf,
  type TaskEntry,
  type TaskEntryView,
  type TaskOutcome,
  type TaskRating,
  toTaskEntryView,
} from './Job.ts'
import { amountToNumber, formatAmount } from './Money.ts'
import { ESCROW_DEADLINE_SLACK_SECONDS } from './payments/Escrow.ts'
import { type EscrowJob, reasonHash } from './payments/JobEscrow.ts'
import { type PayerProofTypedData, payerProofTypedData } from './payments/PayerProof.ts'
import type { BuyerDecisions } from './ports/Store.ts'
import type { ResultReveal, SkillRecord } from './Skill.ts'
import { TRUST_CREDITED_METHODS } from './Trust.ts'
import {
  boundedJsonObject,
  boundedText,
  HttpUrl,
  noControlCharacters,
  pageNumber,
  strictFields,
  visibleText,
  WalletAddressInput,
} from './Validation.ts'

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

/** The largest `params` object, measured as UTF-8 JSON. */
export const MAX_PARAMS_BYTES = 16 * 1024
/** The deepest `params` object: levels of nested objects and arrays, the object itself being level 1. */
export const MAX_PARAMS_DEPTH = 32
/** The longest Idempotency-Key header accepted. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255

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

const TxHash = v.pipe(
  v.string('must be a string'),
  v.trim(),
  v.regex(/^0x[0-9a-fA-F]{64}$/, 'must be a transaction hash: 0x and 64 hex digits'),
  v.toLowerCase(),
  v.transform((text) => text as Hex),
)

/** An EIP-712 signature: 65 bytes from a key, longer from contract wallets (ERC-1271, ERC-6492 wrapped). */
export const Signature = v.pipe(
  v.string('must be a string'),
  v.trim(),
  v.regex(
    /^0x(?:[0-9a-fA-F]{2}){64,8192}$/,
    'must be an EIP-712 signature: 0x and an even number of hex digits (130 for a key, more for contract wallets)',
  ),
  v.toLowerCase(),
  v.transform((text) => text as Hex),
)

const Params = boundedJsonObject(MAX_PARAMS_BYTES, MAX_PARAMS_DEPTH)

/** Body of POST /api/agents/{name}/tasks. */
export const CreateTaskInput = strictFields({
  skill: boundedText(100, 1),
  params: v.optional(Params),
  buyer: v.optional(
    v.pipe(
      v.string('must be a string'),
      v.regex(AGENT_NAME_PATTERN, 'must be an agent name: 2-50 letters, digits, hyphens or underscores'),
    ),
  ),
  buyer_email: v.optional(
    v.pipe(
      v.string('must be a string'),
      v.trim(),
      v.maxLength(254, 'must be at most 254 characters'),
      v.email('must be an e-mail address'),
    ),
  ),
  buyer_wallet: v.optional(WalletAddressInput),
  tx_hash: v.optional(TxHash),
  /** The paying wallet's EIP-712 signature binding `tx_hash` to this order (see PayerProof.ts). */
  payer_signature: v.optional(
    v.pipe(
      Signature,
      v.description(
        'Required with tx_hash: the paying wallet\'s EIP-712 signature of the agent card\'s commerce.payer_proof (task ""), message.txHash = tx_hash.',
      ),
    ),
  ),
})
/** Validated create input. */
export type CreateTaskInput = v.InferOutput<typeof CreateTaskInput>

/** Body of a paid per-skill order (SPEC row 12): the skill comes from the path; a payment credential pays it. */
export const PaidOrderInput = strictFields({
  skill: v.optional(boundedText(100, 1)),
  params: CreateTaskInput.entries.params,
  buyer: CreateTaskInput.entries.buyer,
  buyer_email: CreateTaskInput.entries.buyer_email,
  buyer_wallet: CreateTaskInput.entries.buyer_wallet,
})
/** Validated paid order. */
export type PaidOrderInput = v.InferOutput<typeof PaidOrderInput>

/** Body of POST …/tasks/{id}/verify-payment: the payment and the paying wallet's signature binding it to the task. */
export const VerifyPaymentInput = strictFields({
  tx_hash: TxHash,
  payer_signature: v.optional(
    v.pipe(
      Signature,
      v.description(
        "Required (400 payer_signature_required without it): the paying wallet's EIP-712 signature of the task's payment.payer_proof, message.txHash = tx_hash.",
      ),
    ),
  ),
})

/** Body of POST …/tasks/{id}/accept and …/reject: the buyer's decision, signed by the wallet that paid. */
export const DecisionInput = strictFields({
  reason: v.optional(boundedText(MAX_REASON_LENGTH)),
  signature: v.pipe(
    Signature,
    v.description(
      "The paying wallet's EIP-712 signature of the task's review.decision typed data, with message.decision and message.reason as sent.",
    ),
  ),
})
/** Validated decision. */
export type DecisionInput = v.InferOutput<typeof DecisionInput>

const DISPUTE_REASON = `the reason for the dispute, ${DISPUTE_REASON_LENGTH.min}-${DISPUTE_REASON_LENGTH.max} characters (the same text as message.reason signed)`

/** Body of POST …/tasks/{id}/reject: the reason (1-1000 characters; a dispute needs one) and the buyer's signature. */
export const RejectionInput = strictFields(
  {
    reason: v.pipe(
      v.string(`must be ${DISPUTE_REASON}`),
      noControlCharacters(),
      v.trim(),
      v.minLength(DISPUTE_REASON_LENGTH.min, `must not be empty or blank: send ${DISPUTE_REASON}`),
      visibleText(DISPUTE_REASON),
      v.maxLength(
        DISPUTE_REASON_LENGTH.max,
        `must be at most ${DISPUTE_REASON_LENGTH.max} characters: send ${DISPUTE_REASON}`,
      ),
    ),
    signature: DecisionInput.entries.signature,
  },
  undefined,
  { reason: `send ${DISPUTE_REASON}` },
)

/** Body of POST …/tasks/{id}/rating: 1-5 stars, a comment, signed by the wallet that paid. */
export const RatingInput = strictFields({
  score: v.pipe(
    v.number('must be a whole number from 1 to 5'),
    v.integer('must be a whole number from 1 to 5'),
    v.minValue(1, 'must be at least 1'),
    v.maxValue(5, 'must be at most 5'),
  ),
  comment: v.optional(boundedText(MAX_REASON_LENGTH)),
  signature: v.pipe(
    Signature,
    v.description(
      "The paying wallet's EIP-712 signature of the task's rate typed data, with message.score and message.comment as sent.",
    ),
  ),
})

/** Body of POST …/tasks/{id}/complete. */
export const CompleteTaskInput = strictFields({ result_url: HttpUrl })

/** The `Idempotency-Key` header: 1-255 visible ASCII characters. */
export const IdempotencyKey = v.pipe(
  v.string(),
  v.regex(/^[\x21-\x7e]{1,255}$/, 'must be 1-255 visible ASCII characters'),
)

/** Query of GET /api/agents/{name}/tasks. */
export const TaskListInput = strictFields({
  status: v.optional(
    v.picklist(
      [...TASK_STATUSES, 'all'],
      `must be one of ${[...TASK_STATUSES, 'all'].map((status) => `"${status}"`).join(', ')}`,
    ),
  ),
  limit: v.optional(pageNumber(1, 100), 20),
  offset: v.optional(pageNumber(0, 1_000_000_000), 0),
})

/** The skill of `agentSkills` named by `nameOrSlug` (its slug, or its name without regard to case). */
export function findSkill(agentSkills: readonly SkillRecord[], nameOrSlug: string): SkillRecord | undefined {
  const wanted = nameOrSlug.trim().toLowerCase()
  return (
    agentSkills.find((skill) => skill.slug === wanted) ??
    agentSkills.find((skill) => skill.name.toLowerCase() === wanted)
  )
}

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

/** The four texts that tell a buyer what to do next. */
export type NextSteps = { pay: string; verify: string; verify_body: string; check_status: string }

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

/** The paths of a task's actions. */
export function taskPaths(baseUrl: string, task: Pick<TaskRecord, 'agentName' | 'id'>) {
  const self = `${baseUrl}/api/agents/${encodeURIComponent(task.agentName)}/tasks/${task.id}`
  return {
    self,
    verify: `${self}/verify-payment`,
    complete: `${self}/complete`,
    accept: `${self}/accept`,
    reject: `${self}/reject`,
  }
}

/** What a buyer polling the task does next: decide a delivery under review, else wait for `completed`. */
function checkStatusStep(task: TaskRecord, paths: ReturnType<typeof taskPaths>): string {
  const decide = `POST ${paths.accept} or ${paths.reject} (with a reason) signed by the paying wallet before review_until; silence accepts.`
  if (task.status !== 'delivered')
    return `GET ${paths.self} until status is "completed", then read result_url.`
  if (task.reveal === 'on_delivery') return `Read result_url, then ${decide}`
  return `The seller reveals result_url only once the task is completed (accepted, or silence past review_until), never after a rejection; result_commitment is its keccak256. ${decide}`
}

/** The escrow-first way to pay `task`, with the deadline its deposit must name (the seller claims after it). */
function escrowStep(task: TaskRecord, usdcContract: Address, escrowContract: Address): string {
  const sla = task.slaSeconds ?? DEFAULT_JOB_SECONDS
  return ` Or escrow-first: approve ${usdcContract} for ${escrowContract}, then call deposit(taskId, ${task.payTo}, ${task.priceBaseUnits}, slaDeadline) on ${escrowContract}, slaDeadline being the unix time you send it plus ${sla} (the SLA in seconds): a deadline later than ${sla + ESCROW_DEADLINE_SLACK_SECONDS} seconds after the market verifies the deposit pays nothing.`
}

/** What the buyer does next, with real paths. */
export function nextSteps(task: TaskRecord, config: MarketConfig): NextSteps {
  const paths = taskPaths(config.baseUrl, task)
  const check_status = checkStatusStep(task, paths)
  if (task.priceBaseUnits === 0n || !task.payTo) {
    return {
      pay: 'Nothing to pay: this skill is free.',
      verify: 'Nothing to verify: the task is already paid.',
      verify_body: '{}',
      check_status,
    }
  }
  // Paid (or delivered) tasks ask for nothing more; an expired one is not paid again.
  if (task.status !== 'pending_payment') {
    const done = task.status === 'expired' ? 'the task expired unpaid; order again' : 'the task is paid'
    return {
      pay: `Nothing to pay: ${done}.`,
      verify: `Nothing to verify: ${done}.`,
      verify_body: '{}',
      check_status,
    }
  }
  const amount = formatAmount(task.priceBaseUnits)
  const { chainId, usdcContract, escrowContract } = config.chain
  const escrow = escrowContract ? escrowStep(task, usdcContract, escrowContract) : ''
  const deadline = task.expiresAt ? ` before ${task.expiresAt.toISOString()}` : ''
  return {
    pay: `Send ${amount} USDC (${task.priceBaseUnits} base units of token ${usdcContract}) on ${chainName(chainId)} (chain id ${chainId}) to ${task.payTo}${deadline}.${escrow} Then sign payment.payer_proof (EIP-712) with the wallet that paid, its message.txHash set to your transaction hash: only that signature lets your payment pay this task.`,
    verify: `POST ${paths.verify}`,
    verify_body:
      '{"tx_hash": "0x<hash of your payment transaction>", "payer_signature": "0x<EIP-712 signature of payment.payer_proof by the paying wallet>"}',
    check_status,
  }
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

/**
 * The task as it stands at `now` by time alone (the sweep stores it later): awaiting payment past `expiresAt`, or paid
 * and undelivered past `dueAt`, it is `expired`; delivered past `reviewUntil`, the buyer's silence accepted it.
 */
export function taskAt(task: TaskRecord, now: Date): TaskRecord {
  // A job in escrow moves by the chain's events only (the job follower), never by the clock.
  if (task.payment?.job) return task
  const past = (when: Date | null) => when !== null && when <= now
  if (task.status === 'pending_payment' && past(task.expiresAt))
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

/** The end of the buyer's review of a delivery; null before one. */
export function taskReviewUntil(
  task: Pick<TaskRecord, 'reviewSeconds' | 'deliveredAt' | 'payment'>,
): Date | null {
  const seconds = task.payment?.job?.reviewSeconds ?? task.reviewSeconds
  return task.deliveredAt ? reviewUntilOf(seconds, task.deliveredAt) : null
}

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
  if (!SHOWS_RESULT.includes(task.status) || !task.resultUrl) return {}
  if (task.reveal === 'on_delivery') return { result_url: task.resultUrl }
  const result_commitment = resultCommitment(task.resultUrl)
  return task.status === 'completed'
    ? { result_url: task.resultUrl, result_commitment }
    : { result_commitment }
}

/** True while a task waits for a payment on the payment chain. */
const awaitsChainPayment = (task: TaskRecord) => task.status === 'pending_payment' && task.payTo !== null

/** The transaction that paid a task: its payment's, or a job's funding (which claims its key, not its hash). */
export function paymentTxHash(payment: TaskPayment | null): Hex | null {
  return payment?.txHash ?? payment?.job?.fundingTx ?? null
}

/** The task as its buyer reads it (SPEC row 10) at `now` (the job escrow's offered funding starts from it). */
export function toTaskView(task: TaskRecord, config: MarketConfig, now = task.createdAt): TaskView {
  const paid = task.payment
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
      ...paymentNetwork(paid?.method ?? null, config),
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
    ...jobFields(task),
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
  return Object.assign(view, resultFields(task))
}

/** The wallet that speaks for a task's buyer: the payer the chain showed, else the wallet the order named. */
export function buyerWalletOf(task: Pick<TaskRecord, 'payment' | 'buyerWallet'>): Address | null {
  return task.payment?.from ?? task.buyerWallet
}

/** Whether a task can be rated: finished (completed, rejected or expired after payment), paid on chain by a wallet. */
export function isRatable(task: TaskRecord): boolean {
  const paid = task.payment
  if (!paid?.from || paid.amountBaseUnits <= 0n || !TRUST_CREDITED_METHODS.includes(paid.method)) return false
  // A mint's Transfer comes from the zero address: nobody is known to have paid.
  if (paid.from.toLowerCase() === zeroAddress) return false
  return task.status === 'completed' || task.status === 'rejected' || task.status === 'expired'
}

/** The job facts of a task on the wire. */
function jobFields(task: TaskRecord) {
  return {
    sla_seconds: task.slaSeconds,
    due_at: iso(taskDueAt(task)),
    delivered_at: iso(task.deliveredAt),
    review_seconds: task.reviewSeconds,
    reveal: task.reveal,
    review_until: iso(taskReviewUntil(task)),
    outcome: task.outcome,
    records: task.entries.map(toTaskEntryView),
  }
}

/** Whether a task was delivered by its deadline: null until delivered or overdue. */
export function onTime(task: TaskRecord): boolean | null {
  if (task.outcome === 'late') return false
  if (!task.deliveredAt) return null
  const due = taskDueAt(task)
  return due === null || task.deliveredAt <= due
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

/** Delay before the next background re-check of a pending payment: 5 s doubling to 5 min. */
export function recheckDelayMs(attempts: number): number {
  return Math.min(5_000 * 2 ** Math.min(attempts, 10), 300_000)
}

/** How long an unpaid task waits for its payment before it is `expired`. */
export const UNPAID_TASK_TTL_MS = 24 * 60 * 60 * 1000
/** Expired tasks are deleted this long after they expired (their ids then answer 404). */
export const EXPIRED_TASK_RETENTION_MS = 7 * 24 * 60 * 60 * 1000
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
