import {
  type Address,
  decodeEventLog,
  encodeFunctionData,
  type Hex,
  keccak256,
  parseAbi,
  stringToHex,
  zeroAddress,
} from 'viem'
import type { PaymentReceipt, ReceiptLog } from '../ports/Chain.ts'
import { checksummedAddress, sameAddress } from './Addresses.ts'

/**
 * The job escrow (contracts/JobEscrow.sol, shaped like ERC-8183): the buyer funds a job for the seller with a delivery
 * deadline and a review window; the seller submits; the evaluator (the buyer unless another address was named)
 * completes or rejects; silence past the window pays the seller (claimPayment), and an undelivered job past its
 * deadline refunds the buyer (claimRefund), each callable by anyone. docs/jobs.md.
 */
export const JOB_ESCROW_ABI = parseAbi([
  'function fund(bytes32 jobId, address provider, address evaluator, uint256 budget, uint64 deliverBy, uint64 reviewWindow)',
  'function submit(bytes32 key, bytes32 deliverable)',
  'function complete(bytes32 key, bytes32 reason)',
  'function reject(bytes32 key, bytes32 reason)',
  'function claimRefund(bytes32 key)',
  'function claimPayment(bytes32 key)',
  'function keyOf(address client, bytes32 jobId) pure returns (bytes32)',
  'function jobs(bytes32 key) view returns (address client, address provider, address evaluator, uint96 budget, uint64 deliverBy, uint64 reviewWindow, uint64 submittedAt, uint8 status)',
  'event JobFunded(bytes32 indexed key, bytes32 indexed jobId, address indexed client, address provider, address evaluator, uint256 budget, uint64 deliverBy, uint64 reviewWindow, uint64 fundedAt)',
  'event JobSubmitted(bytes32 indexed key, bytes32 deliverable, uint64 submittedAt)',
  'event JobCompleted(bytes32 indexed key, bytes32 reason, bool bySilence)',
  'event JobRejected(bytes32 indexed key, address indexed rejector, bytes32 reason)',
  'event JobExpired(bytes32 indexed key)',
])

const APPROVE_ABI = parseAbi(['function approve(address spender, uint256 amount) returns (bool)'])

/** A job's state on the contract, in the order of its `Status` enum (`none`: no job has the key). */
export const JOB_STATUSES = ['none', 'funded', 'submitted', 'completed', 'rejected', 'expired'] as const
/** A job's state on the contract. */
export type JobStatus = (typeof JOB_STATUSES)[number]

/** A funded job as a task keeps it: its key on the contract and the terms the funding set. */
export type EscrowJob = {
  contract: Address
  /** keccak256(abi.encode(client, jobId)): what every later event names. */
  key: Hex
  client: Address
  evaluator: Address
  /** The contract's delivery deadline: past it, undelivered, anyone can refund the buyer. */
  deliverBy: Date
  reviewSeconds: number
  /** The funding transaction (it may fund other jobs too: a smart wallet's batch). */
  fundingTx: Hex
}

/** A job as JSON for a store (the deadline in epoch ms). */
export function escrowJobToJson(job: EscrowJob): Record<string, unknown> {
  return { ...job, deliverBy: job.deliverBy.getTime() }
}

/** A job read back from its JSON form. */
export function escrowJobFromJson(json: Record<string, unknown>): EscrowJob {
  return {
    contract: json.contract as Address,
    key: json.key as Hex,
    client: json.client as Address,
    evaluator: json.evaluator as Address,
    deliverBy: new Date(json.deliverBy as number),
    reviewSeconds: Number(json.reviewSeconds),
    fundingTx: json.fundingTx as Hex,
  }
}

/** A job escrow event, decoded, with where it happened. */
export type JobEvent = { txHash: Hex; blockNumber: bigint; logIndex: number } & (
  | {
      name: 'JobFunded'
      key: Hex
      jobId: Hex
      client: Address
      provider: Address
      evaluator: Address
      budget: bigint
      deliverBy: bigint
      reviewWindow: bigint
      fundedAt: bigint
    }
  | { name: 'JobSubmitted'; key: Hex; deliverable: Hex; submittedAt: bigint }
  | { name: 'JobCompleted'; key: Hex; reason: Hex; bySilence: boolean }
  | { name: 'JobRejected'; key: Hex; rejector: Address; reason: Hex }
  | { name: 'JobExpired'; key: Hex }
)

/** The job id of a task on the contract: keccak256 of its id, which only those who know the id can link to it. */
export function jobIdOf(taskId: string): Hex {
  return keccak256(stringToHex(taskId))
}

/** A short text as the contract's bytes32 reason: its keccak256 (the text itself stays off chain). */
export function reasonHash(text: string): Hex {
  return keccak256(stringToHex(text))
}

/** Decodes a log of the job escrow; null for any other log or a malformed one. */
export function decodeJobEvent(
  log: ReceiptLog & { transactionHash: Hex; blockNumber: bigint },
): JobEvent | null {
  try {
    const event = decodeEventLog({
      abi: JOB_ESCROW_ABI,
      data: log.data,
      topics: log.topics as [Hex, ...Hex[]],
      strict: true,
    })
    const where = { txHash: log.transactionHash, blockNumber: log.blockNumber, logIndex: log.logIndex }
    return { ...where, name: event.eventName, ...event.args } as JobEvent
  } catch {
    return null
  }
}

/** The job escrow's events in a receipt (from `contract` only). */
export function jobEventsOf(receipt: PaymentReceipt, contract: Address): JobEvent[] {
  return receipt.logs.flatMap((log) => {
    if (!sameAddress(log.address, contract)) return []
    const event = decodeJobEvent({
      ...log,
      transactionHash: receipt.transactionHash,
      blockNumber: receipt.blockNumber,
    })
    return event ? [event] : []
  })
}

/** What a funding must show to pay a task. */
export type JobFundingExpectation = {
  contract: Address
  jobId: Hex
  seller: Address
  minAmount: bigint
  /** The order's buyer_wallet, when it named one: the job's client must be it. */
  client?: Address | null
  reviewSeconds: number
  /** The least time to deliver the seller accepts (its SLA; 24 hours without one), from the funding's block and from `judgedAt`. */
  deliverySeconds: number
  /**
   * When the market judges the funding (unix seconds): it marks the task paid then, so the seller's SLA starts there.
   * A funding verified after too much of its time passed would make a seller late on a job it could never deliver.
   */
  judgedAt: bigint
}

/** Why a funding does not pay the task, or the job it funded. */
export type JobFundingJudgement =
  | { ok: true; job: EscrowJob; amount: bigint }
  | {
      ok: false
      reason: 'not_an_escrow_deposit' | 'wrong_recipient' | 'amount_mismatch' | 'wrong_sender' | 'wrong_terms'
    }

/** Judges the JobFunded event of a task's funding against what the task needs. Pure. */
export function judgeJobFunding(
  events: readonly JobEvent[],
  expected: JobFundingExpectation,
): JobFundingJudgement {
  const funded = events.find(
    (event): event is Extract<JobEvent, { name: 'JobFunded' }> =>
      event.name === 'JobFunded' && event.jobId.toLowerCase() === expected.jobId.toLowerCase(),
  )
  if (!funded) return { ok: false, reason: 'not_an_escrow_deposit' }
  if (!sameAddress(funded.provider, expected.seller)) return { ok: false, reason: 'wrong_recipient' }
  if (funded.budget < expected.minAmount) return { ok: false, reason: 'amount_mismatch' }
  if (expected.client && !sameAddress(funded.client, expected.client))
    return { ok: false, reason: 'wrong_sender' }
  // The SLA runs from the funding and from the market's judgement (the task becomes paid then): a deadline with less
  // left would let a buyer that withholds its verify-payment make the seller late, or pay a job already refunded.
  // The evaluator decides who is paid: the seller may never be it (the buyer by default, or a named third party).
  const sla = BigInt(expected.deliverySeconds)
  const termsHold =
    funded.reviewWindow === BigInt(expected.reviewSeconds) &&
    funded.deliverBy >= funded.fundedAt + sla &&
    funded.deliverBy >= expected.judgedAt + sla &&
    !sameAddress(funded.evaluator, expected.seller)
  if (!termsHold) return { ok: false, reason: 'wrong_terms' }
  return {
    ok: true,
    amount: funded.budget,
    job: {
      contract: checksummedAddress(expected.contract),
      key: funded.key,
      client: checksummedAddress(funded.client),
      evaluator: checksummedAddress(funded.evaluator),
      deliverBy: new Date(Number(funded.deliverBy) * 1000),
      reviewSeconds: Number(funded.reviewWindow),
      fundingTx: funded.txHash,
    },
  }
}

/** One transaction a party sends for a step of the job: to, calldata, and who may send it from when. */
export type JobCall = {
  step: 'approve' | 'fund' | 'submit' | 'complete' | 'reject' | 'claimRefund' | 'claimPayment'
  /** Who may send it: the buyer, the seller, the evaluator, or anyone. */
  from: 'buyer' | 'seller' | 'evaluator' | 'anyone'
  to: Address
  data: Hex
  /** When it becomes valid (unix time as ISO text); null: now. */
  notBefore: string | null
  /** When it stops being valid; null: never. */
  notAfter: string | null
}

/** The calls that fund a job for a task: approve USDC for the escrow, then fund (the evaluator: the buyer). */
export function fundingCalls(
  usdc: Address,
  contract: Address,
  terms: { jobId: Hex; seller: Address; amount: bigint; deliverBy: bigint; reviewSeconds: number },
): JobCall[] {
  const approve = encodeFunctionData({
    abi: APPROVE_ABI,
    functionName: 'approve',
    args: [contract, terms.amount],
  })
  const fund = encodeFunctionData({
    abi: JOB_ESCROW_ABI,
    functionName: 'fund',
    args: [
      terms.jobId,
      terms.seller,
      zeroAddress,
      terms.amount,
      terms.deliverBy,
      BigInt(terms.reviewSeconds),
    ],
  })
  return [jobCall('approve', 'buyer', usdc, approve), jobCall('fund', 'buyer', contract, fund)]
}

/** A call of a job's step, valid from `notBefore` until `notAfter` (each absent: no bound). */
export function jobCall(
  step: JobCall['step'],
  from: JobCall['from'],
  to: Address,
  data: Hex,
  window: { notBefore?: Date; notAfter?: Date } = {},
): JobCall {
  return {
    step,
    from,
    to,
    data,
    notBefore: window.notBefore?.toISOString() ?? null,
    notAfter: window.notAfter?.toISOString() ?? null,
  }
}

/** The calldata of a later step on a funded job (`reason` and `deliverable`: texts, hashed). */
export function jobStepData(
  step: 'submit' | 'complete' | 'reject' | 'claimRefund' | 'claimPayment',
  key: Hex,
  text = '',
): Hex {
  if (step === 'claimRefund' || step === 'claimPayment')
    return encodeFunctionData({ abi: JOB_ESCROW_ABI, functionName: step, args: [key] })
  return encodeFunctionData({ abi: JOB_ESCROW_ABI, functionName: step, args: [key, reasonHash(text)] })
}
