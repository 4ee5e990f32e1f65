import { type Address, type Client, type Hex, isAddress, isAddressEqual } from 'viem'
import { currentScope, inScope, scopeOutsideRequests } from '../ports/requestScope.ts'
import { type BroadcastOptions, type PaymentReceipt, type PlainCharge, plainCharge } from './MppBroadcast.ts'
import { isMemoBoundTo, memoTransfers } from './MppMemo.ts'
import { paymentRefusals } from './MppRefusals.ts'
import { replayKey } from './MppReplay.ts'

/** What mppx's charge hands a method's broadcast for a push-mode credential: the hash of a transaction sent. */
type HashInput = {
  credential: {
    challenge: { id: string; realm: string; expires?: string; request: Record<string, unknown> }
    payload: { type: string; hash?: string }
    source?: string
  }
}

/** A receipt as eth_getTransactionReceipt answers it (hex quantities): the fields a verification reads. */
export type RpcReceipt = {
  transactionHash: Hex
  blockNumber: Hex
  status: Hex
  from: Address
  logs: { address: Address; topics: Hex[]; data: Hex }[]
}

const TRANSACTION_HASH = /^0x[0-9a-fA-F]{64}$/

/** The mined receipt of `hash` as the node sends it, or null (not mined yet). */
export async function transactionReceipt(client: Client, hash: string): Promise<RpcReceipt | null> {
  return (await client.request({
    method: 'eth_getTransactionReceipt',
    params: [hash],
  } as never)) as RpcReceipt | null
}

/** What a hash credential's receipt must pay: its hash, its payer (the credential's source), charge and challenge. */
type HashPayment = {
  hash: string
  payer: Address | null
  charge: PlainCharge
  challenge: { id: string; realm: string }
}

/**
 * Why `receipt` does not pay a hash credential (mppx's words and details), or null when it does: a receipt of that very
 * hash that succeeded, with a TransferWithMemo log of the charge's currency, from the sender (and the payer, when the
 * credential names one), to the recipient, of the amount, with a memo bound to this realm and challenge.
 */
export function receiptRefusal(
  receipt: RpcReceipt,
  { hash, payer, charge, challenge }: HashPayment,
): { reason: string; details?: Record<string, string> } | null {
  if (receipt.transactionHash?.toLowerCase() !== hash.toLowerCase())
    return { reason: 'Payment verification failed: the receipt is of another transaction.' }
  if (receipt.status !== '0x1') return { reason: `Transaction reverted: ${hash}` }
  // The payer is the transaction's sender; a credential naming another payer names someone else's transfer.
  if (payer && !isAddressEqual(payer, receipt.from))
    return { reason: 'Hash credential source is not the transaction sender.' }
  const paid = memoTransfers(receipt.logs).find(
    (log) =>
      isAddressEqual(log.address, charge.currency) &&
      isAddressEqual(log.to, charge.recipient) &&
      log.amount === charge.amount &&
      isAddressEqual(log.from, receipt.from),
  )
  if (!paid)
    return {
      reason: 'Payment verification failed: no matching transfer found.',
      details: { amount: String(charge.amount), currency: charge.currency, recipient: charge.recipient },
    }
  if (!isMemoBoundTo(paid.memo, challenge.realm, challenge.id))
    return { reason: 'Payment verification failed: memo is not bound to this challenge.' }
  return null
}

/**
 * Runs `work` (a charge) for a caller that records each payment it takes as a task, whose insert claims the transfer
 * (a store's unique transaction hash of a paid task) in the task's own commit: a hash credential's transfer, mined
 * before it came, is then verified without a replay marker of its own (one commit per paid order, not two, and a crash
 * leaves neither). A signed transaction is still claimed before its broadcast (MppBroadcast.ts).
 */
export async function withTaskClaim<T>(work: () => Promise<T>): Promise<T> {
  // The charge runs inside mppx's handler: the order says so in its request's scope, set for `work` and restored.
  const scope = currentScope()
  if (!scope) return inScope(scopeOutsideRequests(), () => withTaskClaim(work))
  const claimed = scope.taskClaim
  scope.taskClaim = true
  try {
    return await work()
  } finally {
    scope.taskClaim = claimed
  }
}

/**
 * The payer a hash credential names in its `source` on the challenge's chain (`chainId`, when known): null when it names
 * none, `invalid` when it is malformed or names another chain.
 */
export function payerOf(source: string | undefined, chainId: number | undefined): Address | null | 'invalid' {
  if (source === undefined) return null
  const payer = sourceOf(source)
  if (!payer || (chainId !== undefined && payer.chainId !== chainId)) return 'invalid'
  return payer.address
}

/** The payer a credential names (`did:pkh:eip155:<chain>:<address>`, as mppx's clients write it), or null when bad. */
function sourceOf(source: string): { chainId: number; address: Address } | null {
  const match = /^did:pkh:eip155:(0|[1-9]\d*):([^:]+)$/.exec(source)
  const chainId = Number(match?.[1])
  const address = match?.[2]
  if (!Number.isSafeInteger(chainId) || !address || !isAddress(address)) return null
  return { chainId, address }
}

/**
 * A broadcast for mppx's tempo charge that verifies a push-mode credential (the hash of a transaction its payer sent
 * and the chain mined) doing each step once: one receipt read (the payer is its sender, nothing recovered), its
 * memo-carrying Transfer logs decoded once with their own event item, and the replay claim (unless the caller's task
 * claims the transfer: withTaskClaim). It pays only a receipt of that very hash that succeeded, with a
 * TransferWithMemo log of the challenge's currency, from the sender (and the credential's source, when it names one, on
 * the challenge's chain), to the recipient, of the amount, with a memo bound to this realm and challenge. Refusals are
 * mppx's errors with mppx's words; a hash not mined yet is no refusal (nothing is claimed: the caller answers 503 and
 * the same credential may come again). Any other credential, and charges with splits, a fee payer or a fixed memo, go
 * to the next broadcast (`fallback`).
 */
export function receiptBroadcast(options: BroadcastOptions) {
  const { Errors, Store } = options.library
  const { mismatch, used } = paymentRefusals(Errors)

  return async function broadcast(input: HashInput): Promise<PaymentReceipt> {
    const { challenge, payload, source } = input.credential
    const charge = payload.type === 'hash' ? plainCharge(challenge.request) : null
    if (!charge) return (await options.fallback(input as never)) as PaymentReceipt
    options.library.Expires.assert(challenge.expires, challenge.id)
    const hash = payload.hash ?? ''
    if (!TRANSACTION_HASH.test(hash)) throw mismatch('Hash credential is not a transaction hash.')
    const client = await options.getClient({ chainId: charge.chainId })
    const payer = payerOf(source, charge.chainId ?? client.chain?.id)
    if (payer === 'invalid') throw mismatch('Hash credential source is invalid.')
    const receipt = await transactionReceipt(client, hash)
    // Not mined (yet): an error, not a refusal, as mppx's; nothing is claimed, so the payer may send it again.
    if (!receipt) throw new Error(`Transaction receipt of ${hash} not found: not mined yet`)
    const refusal = receiptRefusal(receipt, { hash, payer, charge, challenge })
    if (refusal) throw mismatch(refusal.reason, refusal.details)
    const claimedByTask = currentScope()?.taskClaim === true
    if (
      !claimedByTask &&
      !(await Store.tryClaim(options.store, replayKey(hash as Hex), Date.parse(challenge.expires)))
    )
      throw used()
    return {
      method: 'tempo',
      status: 'success',
      timestamp: new Date().toISOString(),
      reference: receipt.transactionHash,
    }
  }
}
