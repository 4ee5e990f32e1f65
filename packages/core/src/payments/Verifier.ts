import {
  type Address,
  decodeEventLog,
  decodeFunctionData,
  getAddress,
  type Hex,
  isAddressEqual,
  parseAbi,
  toEventSelector,
} from 'viem'
import type { ChainReader, PaymentReceipt, ReceiptLog } from '../ports/Chain.ts'
import { DEPOSIT_ABI, ESCROW_EVENT_ABI } from './Escrow.ts'

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

/** The judgement of one payment. `pending` is the only outcome that can still change. */
export type Verdict =
  | {
      ok: true
      amount: bigint
      from: Address
      blockNumber: bigint
      confirmations: number
      escrowTaskId?: Hex
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
}

type Transfer = { token: Address; from: Address; to: Address; value: bigint }

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

/**
 * The ERC-20 Transfer events of the receipt's logs, read straight from topics and data (the verifier's hot path:
 * no ABI decoding, addresses left unchecksummed until one pays). Anything else, ERC-721 transfers with a fourth topic
 * included, is skipped.
 */
function transfersOf(receipt: PaymentReceipt): Transfer[] {
  return receipt.logs.flatMap((log) => {
    const [topic, from, to] = log.topics
    if (log.topics.length !== 3 || topic?.toLowerCase() !== TRANSFER_TOPIC) return []
    if (!from || !to || !ADDRESS_TOPIC.test(from) || !ADDRESS_TOPIC.test(to) || !UINT256_DATA.test(log.data))
      return []
    const address = (word: Hex) => `0x${word.slice(26)}` as Address
    return [{ token: log.address, from: address(from), to: address(to), value: BigInt(log.data) }]
  })
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

/** The USDC transfers to `recipient`, narrowed to `sender` when one is expected; or why there are none. */
function matchingTransfers(
  transfers: Transfer[],
  token: Address,
  recipient: Address,
  sender: Address | null | undefined,
): Transfer[] | RefusalReason {
  const inToken = transfers.filter((transfer) => isAddressEqual(transfer.token, token))
  if (inToken.length === 0) return 'wrong_token'
  const toRecipient = inToken.filter((transfer) => isAddressEqual(transfer.to, recipient))
  if (toRecipient.length === 0) return 'wrong_recipient'
  // The Transfer log's `from`, never receipt.from: a smart wallet's transaction is sent by a bundler.
  const fromSender = sender
    ? toRecipient.filter((transfer) => isAddressEqual(transfer.from, sender))
    : toRecipient
  return fromSender.length === 0 ? 'wrong_sender' : fromSender
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
  const matches = matchingTransfers(transfersOf(receipt), expected.token, expected.recipient, expected.sender)
  if (typeof matches === 'string') return refuse(matches)
  const paying = matches.find((transfer) => transfer.value >= expected.minAmount)
  if (!paying) return refuse('amount_mismatch')
  return pendingOrPaid(receipt, head, expected.minConfirmations, {
    ok: true,
    amount: paying.value,
    from: getAddress(paying.from),
  })
}

type Deposit = { taskId: Hex; buyer: Address; seller: Address; amount: bigint }

/** The escrow's Deposited events in the receipt. */
function depositEvents(receipt: PaymentReceipt, escrow: Address): Deposit[] {
  return receipt.logs.flatMap((log) => {
    if (!isAddressEqual(log.address, escrow)) return []
    const event = decodeOrNull(ESCROW_EVENT_ABI, log)
    if (!event) return []
    const { taskId, buyer, seller, amount } = event.args
    return [{ taskId, buyer, seller, amount }]
  })
}

/**
 * The deposit a receipt makes: decoded from the call when it calls the escrow, else from the escrow's event. The
 * buyer (the contract keys deposits by buyer and taskId) is the event's, else the sender of the call.
 */
function depositOf(receipt: PaymentReceipt, escrow: Address): Deposit | null {
  const events = depositEvents(receipt, escrow)
  if (receipt.to && isAddressEqual(receipt.to, escrow)) {
    if (receipt.input === null) return null
    try {
      const call = decodeFunctionData({ abi: DEPOSIT_ABI, data: receipt.input })
      const [taskId, seller, amount] = call.args
      const buyer = events.find((event) => event.taskId === taskId)?.buyer ?? receipt.from
      return { taskId, buyer, seller, amount }
    } catch {
      return null
    }
  }
  return events[0] ?? null
}

/**
 * Judges an escrow-first payment: a deposit(taskId, seller, amount, slaDeadline) to the escrow naming the seller
 * with at least the price, and a USDC Transfer into the escrow of that amount in the same receipt. Pure.
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
  if (!isAddressEqual(deposit.seller, expected.seller)) return refuse('wrong_recipient')
  if (deposit.amount < expected.minAmount) return refuse('amount_mismatch')
  if (expected.sender && !isAddressEqual(deposit.buyer, expected.sender)) return refuse('wrong_sender')
  // The escrow pulls the deposit from its buyer: the funding transfer comes from the wallet that owns the deposit.
  const matches = matchingTransfers(transfersOf(receipt), expected.token, expected.escrow, deposit.buyer)
  if (typeof matches === 'string')
    return refuse(matches === 'wrong_recipient' ? 'not_an_escrow_deposit' : matches)
  const funding = matches.find((transfer) => transfer.value >= deposit.amount)
  if (!funding) return refuse('amount_mismatch')
  return pendingOrPaid(receipt, head, expected.minConfirmations, {
    ok: true,
    amount: deposit.amount,
    from: getAddress(deposit.buyer),
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
}

/** True when the transaction calls the escrow or the escrow logged something in it. */
function touchesEscrow(receipt: PaymentReceipt, escrow: Address): boolean {
  if (receipt.to && isAddressEqual(receipt.to, escrow)) return true
  return receipt.logs.some((log) => isAddressEqual(log.address, escrow))
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
  const { escrow, seller, ...common } = expected
  if (receipt && escrow && touchesEscrow(receipt, escrow))
    return judgeEscrow(receipt, head, { ...common, escrow, seller })
  return judgeTransfer(receipt, head, { ...common, recipient: seller })
}

/** One payment to verify: its transaction, and what it must show. */
export type PaymentCheck =
  | { txHash: Hex; kind: 'transfer'; expected: TransferExpectation }
  | { txHash: Hex; kind: 'escrow'; expected: EscrowExpectation }
  | { txHash: Hex; kind: 'task'; expected: TaskPaymentExpectation }

/**
 * Verifies many payments at once: one head read and one batched receipts read for the whole list, then the pure
 * rules. A receipt mined after the head was read counts 0 confirmations, so it is pending, never paid early.
 * @example const [verdict] = await verifyPayments(chain, [{ txHash, kind: 'transfer', expected }])
 */
export async function verifyPayments(
  chain: ChainReader,
  checks: readonly PaymentCheck[],
): Promise<Verdict[]> {
  if (checks.length === 0) return []
  const escrows = checks.flatMap((check) =>
    check.kind === 'transfer' || check.expected.escrow === null ? [] : [check.expected.escrow],
  )
  const [head, receipts] = await Promise.all([
    chain.headBlock(),
    chain.receipts(
      checks.map((check) => check.txHash),
      { callDataFor: escrows },
    ),
  ])
  return checks.map((check, index) => {
    const receipt = receipts[index] ?? null
    if (check.kind === 'escrow') return judgeEscrow(receipt, head, check.expected)
    if (check.kind === 'task') return judgeTaskPayment(receipt, head, check.expected)
    return judgeTransfer(receipt, head, check.expected)
  })
}
