import { type Address, decodeEventLog, decodeFunctionData, type Hex, parseAbi, toEventSelector } from 'viem'
import type { ChainReader, PaymentReceipt, ReceiptLog } from '../ports/Chain.ts'
import { checksummedAddress, lowerAddress, sameAddress } from './Addresses.ts'
import { DEPOSIT_ABI, ESCROW_EVENT_ABI } from './Escrow.ts'
import { type EscrowJob, type JobFundingExpectation, jobEventsOf, judgeJobFunding } from './JobEscrow.ts'

/** The ERC-20 (and TIP-20) Transfer event every payment rule reads. */
export const TRANSFER_EVENT_ABI = parseAbi([
  'event Transfer(address indexed from, address indexed to, uint256 value)',
])

/** Why a payment does not count (yet). */
export type RefusalReason =
  | 'reverted'
  | 'wrong_token'
  | 'wrong_recipient'
  | 'amount_mismatch'
  | 'wrong_sender'
  | 'not_an_escrow_deposit'
  | 'job_terms_mismatch'
  | 'job_not_funded'
  | 'escrow_deadline_too_late'
  | 'tx_is_a_refund'

/** The judgement of one payment. `pending` is the only outcome that can still change. */
export type Verdict =
  | {
      ok: true
      amount: bigint
      from: Address
      blockNumber: bigint
      confirmations: number
      escrowTaskId?: Hex
      /** A job funded in the job escrow: its key and terms. */
      job?: EscrowJob
    }
  | { ok: false; reason: 'pending'; retryable: true; confirmations: number; required: number }
  | { ok: false; reason: RefusalReason; retryable: false }

/** What a plain USDC transfer must show. */
export type TransferExpectation = {
  token: Address
  recipient: Address
  minAmount: bigint
  /** When the task names the buyer's wallet, the transfer must come from it. */
  sender?: Address | null
  minConfirmations: number
}

/** What an escrow-first deposit must show. */
export type EscrowExpectation = {
  token: Address
  escrow: Address
  seller: Address
  minAmount: bigint
  sender?: Address | null
  minConfirmations: number
  /** The latest `slaDeadline` (unix seconds) the deposit may name: the seller claims only after it. */
  latestSlaDeadline: bigint
}

/** The Transfer log that pays: who it comes from and how much. */
type Transfer = { from: Address; value: bigint }

const refuse = (reason: RefusalReason): Verdict => ({ ok: false, reason, retryable: false })
const pending = (confirmations: number, required: number): Verdict => ({
  ok: false,
  reason: 'pending',
  retryable: true,
  confirmations,
  required,
})

/** Confirmations count the block that holds the transaction: head - block + 1. */
export function confirmationsOf(blockNumber: bigint, head: bigint): number {
  const count = head - blockNumber + 1n
  return count > 0n ? Number(count) : 0
}

function pendingOrPaid(
  receipt: PaymentReceipt,
  head: bigint,
  required: number,
  paid: Omit<Extract<Verdict, { ok: true }>, 'confirmations' | 'blockNumber'>,
): Verdict {
  const confirmations = confirmationsOf(receipt.blockNumber, head)
  if (confirmations < required) return pending(confirmations, required)
  return { ...paid, blockNumber: receipt.blockNumber, confirmations }
}

/** topic0 of Transfer(address,address,uint256), hashed once. */
const TRANSFER_TOPIC = toEventSelector(TRANSFER_EVENT_ABI[0])
/** An indexed address topic: 12 zero bytes, then the address. */
const ADDRESS_TOPIC = /^0x0{24}[0-9a-f]{40}$/i
/** One uint256 of log data. */
const UINT256_DATA = /^0x[0-9a-f]{64}$/i

/** Why no Transfer log pays, by how far the closest one got: none in the token, none to the recipient, none from the sender, too little. */
const SHORT_OF: readonly RefusalReason[] = [
  'wrong_token',
  'wrong_recipient',
  'wrong_sender',
  'amount_mismatch',
]

/**
 * The first ERC-20 Transfer log of `token` to `recipient`, from `sender` when one is expected, of at least
 * `minAmount`; or why there is none: no Transfer of the token at all, none of it to the recipient, none of those
 * from the sender, or each of those too small. Logs are read straight from topics and data in one pass (the
 * verifier's hot path: no ABI decoding, no arrays, the amount parsed only for a log that matches the rest); anything
 * but a Transfer with two address topics and one uint256 of data, ERC-721 transfers with a fourth topic included, is
 * skipped. Addresses compare in lowercase, each validated as isAddressEqual does (a malformed one throws).
 */
function payingTransfer(
  logs: readonly ReceiptLog[],
  token: Address,
  recipient: Address,
  sender: Address | null | undefined,
  minAmount: bigint,
): Transfer | RefusalReason {
  // Validated and lowered on first use only, as the filters they replace did.
  let tokenKey: Address | undefined
  let recipientHex: string | undefined
  let senderHex: string | undefined
  let closest = 0
  for (const log of logs) {
    const { topics, data } = log
    if (topics.length !== 3) continue
    const [topic, from, to] = topics as [Hex, Hex, Hex]
    if (topic !== TRANSFER_TOPIC && topic?.toLowerCase() !== TRANSFER_TOPIC) continue
    if (!ADDRESS_TOPIC.test(from) || !ADDRESS_TOPIC.test(to) || !UINT256_DATA.test(data)) continue
    tokenKey ??= lowerAddress(token)
    if (lowerAddress(log.address) !== tokenKey) continue
    if (closest < 1) closest = 1
    // A topic is 24 zeros then the address: its lowercase form ends with the address's 40 digits, or it is another.
    recipientHex ??= lowerAddress(recipient).slice(2)
    if (!to.toLowerCase().endsWith(recipientHex)) continue
    if (closest < 2) closest = 2
    // The Transfer log's `from`, never receipt.from: a smart wallet's transaction is sent by a bundler.
    if (sender) {
      senderHex ??= lowerAddress(sender).slice(2)
      if (!from.toLowerCase().endsWith(senderHex)) continue
    }
    closest = 3
    const value = BigInt(data)
    if (value >= minAmount) return { from: `0x${from.slice(26)}` as Address, value }
  }
  return SHORT_OF[closest] as RefusalReason
}

/** A log decoded with `abi`, or null when it is another event or malformed. */
function decodeOrNull<const TAbi extends typeof TRANSFER_EVENT_ABI | typeof ESCROW_EVENT_ABI>(
  abi: TAbi,
  log: ReceiptLog,
) {
  try {
    return decodeEventLog({ abi, data: log.data, topics: log.topics as [Hex, ...Hex[]], strict: true })
  } catch {
    return null
  }
}

/**
 * Judges a plain USDC payment: one Transfer log of the token to the recipient, of at least the price, from the
 * expected sender if any, in a successful transaction with enough confirmations. Pure.
 * @example judgeTransfer(receipt, head, { token: USDC, recipient: seller, minAmount: 10_000n, minConfirmations: 3 })
 */
export function judgeTransfer(
  receipt: PaymentReceipt | null,
  head: bigint,
  expected: TransferExpectation,
): Verdict {
  if (!receipt) return pending(0, expected.minConfirmations)
  if (receipt.status !== 'success') return refuse('reverted')
  const { token, recipient, sender, minAmount } = expected
  const paying = payingTransfer(receipt.logs, token, recipient, sender, minAmount)
  if (typeof paying === 'string') return refuse(paying)
  return pendingOrPaid(receipt, head, expected.minConfirmations, {
    ok: true,
    amount: paying.value,
    from: checksummedAddress(paying.from),
  })
}

type Deposit = { taskId: Hex; buyer: Address; seller: Address; amount: bigint; slaDeadline: bigint }

/** The escrow's Deposited events in the receipt. */
function depositEvents(receipt: PaymentReceipt, escrow: Address): Deposit[] {
  return receipt.logs.flatMap((log) => {
    if (!sameAddress(log.address, escrow)) return []
    const event = decodeOrNull(ESCROW_EVENT_ABI, log)
    if (!event) return []
    const { taskId, buyer, seller, amount, slaDeadline } = event.args
    return [{ taskId, buyer, seller, amount, slaDeadline }]
  })
}

/**
 * The deposit a receipt makes: decoded from the call when it calls the escrow, else from the escrow's event. The
 * buyer (the contract keys deposits by buyer and taskId) is the event's, else the sender of the call.
 */
function depositOf(receipt: PaymentReceipt, escrow: Address): Deposit | null {
  const events = depositEvents(receipt, escrow)
  if (receipt.to && sameAddress(receipt.to, escrow)) {
    if (receipt.input === null) return null
    try {
      const call = decodeFunctionData({ abi: DEPOSIT_ABI, data: receipt.input })
      const [taskId, seller, amount, slaDeadline] = call.args
      const buyer = events.find((event) => event.taskId === taskId)?.buyer ?? receipt.from
      return { taskId, buyer, seller, amount, slaDeadline }
    } catch {
      return null
    }
  }
  return events[0] ?? null
}

/**
 * Judges an escrow-first payment: a deposit(taskId, seller, amount, slaDeadline) to the escrow naming the seller
 * with at least the price and a deadline no later than `latestSlaDeadline`, and a USDC Transfer into the escrow of
 * that amount in the same receipt. Pure.
 */
export function judgeEscrow(
  receipt: PaymentReceipt | null,
  head: bigint,
  expected: EscrowExpectation,
): Verdict {
  if (!receipt) return pending(0, expected.minConfirmations)
  if (receipt.status !== 'success') return refuse('reverted')
  const deposit = depositOf(receipt, expected.escrow)
  if (!deposit) return refuse('not_an_escrow_deposit')
  if (!sameAddress(deposit.seller, expected.seller)) return refuse('wrong_recipient')
  if (deposit.amount < expected.minAmount) return refuse('amount_mismatch')
  if (expected.sender && !sameAddress(deposit.buyer, expected.sender)) return refuse('wrong_sender')
  // The seller claims only after slaDeadline and the contract has no other way out: a later one holds its money.
  if (deposit.slaDeadline > expected.latestSlaDeadline) return refuse('escrow_deadline_too_late')
  // The escrow pulls the deposit from its buyer: the funding transfer comes from the wallet that owns the deposit.
  const funding = payingTransfer(receipt.logs, expected.token, expected.escrow, deposit.buyer, deposit.amount)
  if (typeof funding === 'string')
    return refuse(funding === 'wrong_recipient' ? 'not_an_escrow_deposit' : funding)
  return pendingOrPaid(receipt, head, expected.minConfirmations, {
    ok: true,
    amount: deposit.amount,
    from: checksummedAddress(deposit.buyer),
    escrowTaskId: deposit.taskId,
  })
}

/** What a task's payment must show: a transfer to the seller, or (when an escrow is set) a deposit naming it. */
export type TaskPaymentExpectation = {
  token: Address
  seller: Address
  minAmount: bigint
  sender?: Address | null
  minConfirmations: number
  escrow: Address | null
  /** The latest `slaDeadline` (unix seconds) an escrow deposit may name. */
  latestSlaDeadline: bigint
  /** The job escrow funding this task may be paid by (its job id and terms); null when none. */
  job?: JobFundingExpectation | null
}

/** True when the transaction calls the escrow or the escrow logged something in it. */
function touchesEscrow(receipt: PaymentReceipt, escrow: Address): boolean {
  if (receipt.to && sameAddress(receipt.to, escrow)) return true
  return receipt.logs.some((log) => sameAddress(log.address, escrow))
}

/**
 * Judges a task's payment: as an escrow deposit when the transaction touches the configured escrow, else as a
 * plain transfer to the seller. Pure.
 */
export function judgeTaskPayment(
  receipt: PaymentReceipt | null,
  head: bigint,
  expected: TaskPaymentExpectation,
): Verdict {
  const { escrow, seller, job, latestSlaDeadline, ...common } = expected
  if (receipt && job && touchesEscrow(receipt, job.contract))
    return judgeJobPayment(receipt, head, expected, job)
  if (receipt && escrow && touchesEscrow(receipt, escrow))
    return judgeEscrow(receipt, head, { ...common, escrow, seller, latestSlaDeadline })
  return judgeTransfer(receipt, head, { ...common, recipient: seller })
}

/** Judges a task's funding of a job in the job escrow (a JobFunded event for its job id on those terms). Pure. */
function judgeJobPayment(
  receipt: PaymentReceipt,
  head: bigint,
  expected: TaskPaymentExpectation,
  job: JobFundingExpectation,
): Verdict {
  if (receipt.status !== 'success') return refuse('reverted')
  const judged = judgeJobFunding(jobEventsOf(receipt, job.contract), job)
  if (!judged.ok) return refuse(judged.reason === 'wrong_terms' ? 'job_terms_mismatch' : judged.reason)
  return pendingOrPaid(receipt, head, expected.minConfirmations, {
    ok: true,
    amount: judged.amount,
    from: judged.job.client,
    escrowTaskId: judged.job.key,
    job: judged.job,
  })
}

/** One payment to verify: its transaction, and what it must show. */
export type PaymentCheck =
  | { txHash: Hex; kind: 'transfer'; expected: TransferExpectation }
  | { txHash: Hex; kind: 'escrow'; expected: EscrowExpectation }
  | { txHash: Hex; kind: 'task'; expected: TaskPaymentExpectation }

/**
 * The receipt among `fresh` (receipts the caller's own chain reader returned moments ago) that `check` may be judged
 * by without reading it again: only of the check's own transaction, only for a check that requires one confirmation
 * at most (the receipt, mined, shows that much; a deeper check reads it again at its depth, so a reorganization since
 * cannot count), and never one lacking the call data its escrow deposit is judged by.
 */
function freshReceipt(check: PaymentCheck, fresh: readonly PaymentReceipt[]): PaymentReceipt | null {
  if (check.expected.minConfirmations > 1) return null
  const receipt = fresh.find(
    (candidate) => candidate.transactionHash.toLowerCase() === check.txHash.toLowerCase(),
  )
  if (!receipt) return null
  const escrow = check.kind === 'transfer' ? null : check.expected.escrow
  if (receipt.input === null && escrow && receipt.to && sameAddress(receipt.to, escrow)) return null
  return receipt
}

/** One check judged against its receipt (null: not mined) and the head. */
function judgeCheck(check: PaymentCheck, receipt: PaymentReceipt | null, head: bigint): Verdict {
  if (check.kind === 'escrow') return judgeEscrow(receipt, head, check.expected)
  if (check.kind === 'task') return judgeTaskPayment(receipt, head, check.expected)
  return judgeTransfer(receipt, head, check.expected)
}

/**
 * Verifies many payments at once: one head read and one batched receipts read for the whole list, then the pure
 * rules. A receipt mined after the head was read counts 0 confirmations, so it is pending, never paid early. A check
 * `fresh` holds the receipt of (freshReceipt) is judged by it, its own block its one confirmation; when every check
 * is, nothing is read.
 * @example const [verdict] = await verifyPayments(chain, [{ txHash, kind: 'transfer', expected }])
 */
export async function verifyPayments(
  chain: ChainReader,
  checks: readonly PaymentCheck[],
  fresh: readonly PaymentReceipt[] = [],
): Promise<Verdict[]> {
  if (checks.length === 0) return []
  const held = checks.map((check) => freshReceipt(check, fresh))
  const unread = checks.filter((_, index) => held[index] === null)
  const escrows = unread.flatMap((check) =>
    check.kind === 'transfer' || check.expected.escrow === null ? [] : [check.expected.escrow],
  )
  const [head, receipts] =
    unread.length === 0
      ? [0n, []]
      : await Promise.all([
          chain.headBlock(),
          chain.receipts(
            unread.map((check) => check.txHash),
            { callDataFor: escrows },
          ),
        ])
  let next = 0
  return checks.map((check, index) => {
    const receipt = held[index]
    if (receipt) return judgeCheck(check, receipt, receipt.blockNumber)
    return judgeCheck(check, receipts[next++] ?? null, head)
  })
}
