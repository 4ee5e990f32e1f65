import { AsyncLocalStorage } from 'node:async_hooks'
import type { Errors as MppErrors, Expires as MppExpires, Store as MppStore } from 'mppx'
import {
  type Address,
  type Client,
  decodeAbiParameters,
  type Hex,
  isAddressEqual,
  keccak256,
  parseAbi,
  toFunctionSelector,
} from 'viem'
import { call, sendRawTransactionSync } from 'viem/actions'
import { isMemoBoundTo, memoTransfers } from './MppMemo.ts'
import { paymentRefusals } from './MppRefusals.ts'
import { replayKey } from './MppReplay.ts'
import { type DecodedTempoTransaction, decodeTempoTransaction } from './MppTransaction.ts'

// The two TIP-20 calls a payment may make, each decoded with its own item after an exact-length check: the whole
// token ABI is never searched (viem would hash every item's signature on each call).
const [TRANSFER, TRANSFER_WITH_MEMO] = parseAbi([
  'function transfer(address to, uint256 amount)',
  'function transferWithMemo(address to, uint256 amount, bytes32 memo)',
])
const TRANSFER_SELECTOR = toFunctionSelector(TRANSFER)
const TRANSFER_WITH_MEMO_SELECTOR = toFunctionSelector(TRANSFER_WITH_MEMO)
// A payer short of the currency may swap into it first (mppx's client does): approve, then the DEX's swap.
const APPROVE_SELECTOR = toFunctionSelector('function approve(address spender, uint256 amount)')
const SWAP_EXACT_AMOUNT_OUT_SELECTOR = toFunctionSelector(
  'function swapExactAmountOut(address tokenIn, address tokenOut, uint128 amountOut, uint128 maxAmountIn)',
)
/** Hex digits of a call: the selector (8) and one 32-byte word (64) per argument, nothing after. */
const callLength = (words: number) => 2 + 8 + 64 * words

/** The arguments of a call that pays: to whom, how much, and the memo when it carries one. */
type TransferCall = { recipient: Address; amount: bigint; memo: Hex | null }

/** What mppx's charge hands a method's broadcast: the parsed credential and the route's request. */
type BroadcastInput = {
  credential: {
    challenge: { id: string; realm: string; expires?: string; request: Record<string, unknown> }
    payload: { type: string; signature?: Hex }
  }
}

/** The receipt a broadcast answers: mppx writes it into the Payment-Receipt header. */
export type PaymentReceipt = { method: 'tempo'; status: 'success'; timestamp: string; reference: Hex }

/** The parts of mppx the broadcast uses, loaded with it. */
export type BroadcastLibrary = {
  Errors: typeof MppErrors
  Expires: typeof MppExpires
  Store: typeof MppStore
}

/** The replay claim of one transaction: its key, and mppx's change of it (a marker set unless a live one is there). */
export type ReplayClaim = {
  key: string
  change: (current: unknown) => { op: 'noop' | 'set'; value?: unknown }
}

/**
 * The caller's claims, taken in one write with the broadcast's replay claim (null: a credential the market does not
 * broadcast itself, which claims none here): `taken` when all are, `used` when the transaction's marker is live,
 * `conflict` when the caller's own claims are not; nothing is written unless `taken`.
 */
export type ClaimTogether = (replay: ReplayClaim | null) => Promise<'taken' | 'used' | 'conflict'>

// An order's own claims (mppOrders.ts) ride in the replay claim's write, one store transaction for both; the charge
// runs inside mppx's handler, so the order hands them over in an async-local scope.
const together = new AsyncLocalStorage<ClaimTogether>()

/** Runs `work` (a charge) with `claims` taken in the broadcast's replay-claim write; at most one call is made. */
export function withClaimTogether<T>(claims: ClaimTogether, work: () => Promise<T>): Promise<T> {
  let called = false
  const once: ClaimTogether = (replay) => {
    if (called) throw new Error('an order claims once per charge')
    called = true
    return claims(replay)
  }
  return together.run(once, work)
}

/** What a market broadcast is built from: mppx's parts, the next broadcast, the chain's client and the replay store. */
export type BroadcastOptions = {
  library: BroadcastLibrary
  fallback: (input: never) => Promise<unknown>
  getClient: (options: { chainId?: number }) => Client | Promise<Client>
  store: MppStore.AtomicStore
}

/** The request fields this broadcast settles; any other request (splits, a fixed memo, a fee payer, machine tokens,
 * restricted modes) is left to mppx's own broadcast. */
export type PlainCharge = {
  amount: bigint
  currency: Address
  recipient: Address
  chainId: number | undefined
}

/** The charge `request` asks, when it is a plain one (one transfer, the payer paying its own fees); null otherwise. */
export function plainCharge(request: Record<string, unknown>): PlainCharge | null {
  const details = (request.methodDetails ?? {}) as Record<string, unknown>
  const extra = ['splits', 'memo', 'feePayer', 'machineTokenEnabled', 'supportedModes'].some(
    (key) => details[key] !== undefined && details[key] !== false,
  )
  if (extra || (request.feePayer !== undefined && request.feePayer !== false)) return null
  if (request.machineTokenEnabled || request.splits !== undefined) return null
  const chainId = (details.chainId ?? request.chainId) as number | undefined
  return {
    amount: BigInt(request.amount as string),
    currency: request.currency as Address,
    recipient: request.recipient as Address,
    chainId,
  }
}

/** The transfer `data` makes, decoded with its own ABI item; null for any other call or a malformed one. */
function decodeTransferCall(data: Hex | undefined): TransferCall | null {
  if (!data) return null
  const selector = data.slice(0, 10).toLowerCase()
  const memo = selector === TRANSFER_WITH_MEMO_SELECTOR
  if (!memo && selector !== TRANSFER_SELECTOR) return null
  if (data.length !== callLength(memo ? 3 : 2)) return null
  try {
    const args = decodeAbiParameters(
      memo ? TRANSFER_WITH_MEMO.inputs : TRANSFER.inputs,
      `0x${data.slice(10)}`,
    )
    return { recipient: args[0], amount: args[1], memo: memo ? (args[2] as Hex) : null }
  } catch {
    return null
  }
}

/** The calls after an optional approve-and-swap prefix: every one of them must be a transfer. */
function paymentCalls(transaction: DecodedTempoTransaction) {
  const calls = transaction.calls ?? []
  const selectors = calls.map((one) => one.data?.slice(0, 10).toLowerCase())
  const swapped = selectors[0] === APPROVE_SELECTOR && selectors[1] === SWAP_EXACT_AMOUNT_OUT_SELECTOR
  const rest = calls.slice(swapped ? 2 : 0)
  const selectorsOk = rest.every((one) => {
    const selector = one.data?.slice(0, 10).toLowerCase()
    return selector === TRANSFER_SELECTOR || selector === TRANSFER_WITH_MEMO_SELECTOR
  })
  return rest.length > 0 && selectorsOk ? rest : null
}

/**
 * mppx's own change of a replay key, taken from Store.tryClaim through a store that only records it: the marker, and
 * when an old one may be replaced, stay mppx's.
 */
function replayChange(Store: typeof MppStore, key: string, expires: number): ReplayClaim['change'] {
  let change: ReplayClaim['change'] | null = null
  const recorder = {
    update: (_key: string, recorded: ReplayClaim['change']) => {
      change = recorded
      return Promise.resolve(false)
    },
  }
  void Store.tryClaim(recorder as never, key, expires)
  if (!change) throw new Error("mppx's replay claim was not recorded")
  return change
}

/**
 * A broadcast for mppx's tempo charge that verifies and settles a pull-mode credential (a signed transaction) doing
 * each step once: the transaction decoded once (one sender recovery, shared with the order's payer read), its
 * transfer call decoded once with its own ABI item and checked against the challenge (currency, recipient, amount,
 * chain, a memo bound to this realm and challenge), one simulation, the replay claim, the broadcast of the
 * transaction as decoded, and the receipt's memo-carrying Transfer log decoded once. Refusals are mppx's own errors,
 * with mppx's words, so a client sees the same 402. Any other credential (a hash: MppReceipt.ts; a proof), and charges
 * with splits, a fee payer or a fixed memo, go to the next broadcast (`fallback`).
 */
export function transactionBroadcast(options: BroadcastOptions) {
  const { Errors, Store } = options.library
  const { mismatch, used } = paymentRefusals(Errors)
  const claim = (hash: Hex, expires: number) => Store.tryClaim(options.store, replayKey(hash), expires)
  /** Refused in place of the order's 409 (the order answers its own): its claims were taken by another credential. */
  const inProgress = () =>
    new Errors.VerificationFailedError({ reason: 'Another payment of this order is in progress' })
  /** The claim of the transaction `hash`, taken with the order's own claims when the order handed them over. */
  const claimWithOrder = async (hash: Hex, expires: number) => {
    const claims = together.getStore()
    if (!claims) return claim(hash, expires)
    const outcome = await claims({
      key: replayKey(hash),
      change: replayChange(Store, replayKey(hash), expires),
    })
    if (outcome === 'conflict') throw inProgress()
    return outcome === 'taken'
  }

  /** The transfer call of `transaction` that pays `charge`, its memo bound to the challenge; throws otherwise. */
  function assertPays(
    transaction: DecodedTempoTransaction,
    charge: PlainCharge,
    challenge: { id: string; realm: string },
  ) {
    const calls = paymentCalls(transaction)
    const noMatch = () =>
      mismatch('Invalid transaction: no matching payment call found', {
        amount: String(charge.amount),
        currency: charge.currency,
        recipient: charge.recipient,
      })
    if (!calls) throw mismatch('Invalid transaction: no matching payment call found')
    let paying: TransferCall | null = null
    for (const one of calls) {
      if (!one.to || !isAddressEqual(one.to, charge.currency)) continue
      const decoded = decodeTransferCall(one.data)
      if (
        decoded &&
        isAddressEqual(decoded.recipient, charge.recipient) &&
        decoded.amount === charge.amount
      ) {
        paying = decoded
        break
      }
    }
    if (!paying) throw noMatch()
    if (!paying.memo || !isMemoBoundTo(paying.memo, challenge.realm, challenge.id))
      throw mismatch('Payment verification failed: memo is not bound to this challenge.')
  }

  return async function broadcast(input: BroadcastInput): Promise<PaymentReceipt> {
    const { credential } = input
    // The challenge's request, in canonical form (base units): its HMAC is ours, and mppx has checked that its
    // amount, currency, recipient and chain are this route's before any broadcast is called.
    const charge =
      credential.payload.type === 'transaction' ? plainCharge(credential.challenge.request) : null
    if (!charge) {
      // mppx's own broadcast claims its transaction itself: the order's claims are taken first, alone.
      const claims = together.getStore()
      if (claims && (await claims(null)) === 'conflict') throw inProgress()
      return (await options.fallback(input as never)) as PaymentReceipt
    }
    const { challenge } = credential
    options.library.Expires.assert(challenge.expires, challenge.id)
    const signed = credential.payload.signature
    if (!signed || !/^0x7[68]/i.test(signed))
      throw mismatch('Only Tempo (0x76/0x78) transactions are supported.')
    // Malformed bytes throw as they do in mppx (an internal error: the caller asks the chain, which knows nothing).
    const transaction = await decodeTempoTransaction(signed)
    if (!transaction.signature || !transaction.from)
      throw mismatch('Transaction must be signed by the sender before fee payer co-signing.')
    const client = await options.getClient({ chainId: charge.chainId })
    // The chain the challenge names (the node would refuse another chain's transaction; ours refuses it first).
    const chainId = charge.chainId ?? client.chain?.id
    if (chainId !== undefined && transaction.chainId !== chainId)
      throw mismatch('Invalid transaction: chain id does not match the challenge', {
        chainId: String(chainId),
      })
    assertPays(transaction, charge, challenge)
    // The one simulation: a transaction that would fail is not sent (its payer would pay the fee and its nonce for
    // nothing) and, refused here, leaves no replay marker, so the caller knows nothing was sent.
    await call(client, { ...transaction, account: transaction.from, feePayerSignature: undefined } as never)
    const expires = Date.parse(challenge.expires as string)
    const hash = keccak256(signed)
    if (!(await claimWithOrder(hash, expires))) throw used()
    let sent = false
    let canonicalHash: Hex | null = null
    try {
      // Nodes hash the canonical encoding of a signature: the transaction as decoded is what is sent and claimed.
      const { Transaction } = await import('viem/tempo')
      const canonical = await Transaction.serialize(transaction as never)
      canonicalHash = keccak256(canonical)
      if (canonicalHash.toLowerCase() !== hash.toLowerCase() && !(await claim(canonicalHash, expires))) {
        canonicalHash = null
        throw used()
      }
      sent = true
      const receipt = await sendRawTransactionSync(client, { serializedTransaction: canonical as never })
      const paid = memoTransfers(receipt.logs).find(
        (log) =>
          isAddressEqual(log.address, charge.currency) &&
          isAddressEqual(log.to, charge.recipient) &&
          log.amount === charge.amount &&
          isAddressEqual(log.from, transaction.from as Address),
      )
      if (!paid)
        throw mismatch('Payment verification failed: no matching transfer found.', {
          amount: String(charge.amount),
          currency: charge.currency,
          recipient: charge.recipient,
        })
      if (!isMemoBoundTo(paid.memo, challenge.realm, challenge.id))
        throw mismatch('Payment verification failed: memo is not bound to this challenge.')
      if (receipt.transactionHash.toLowerCase() !== canonicalHash.toLowerCase())
        throw new Errors.VerificationFailedError({
          reason: 'Broadcast transaction hash does not match the signed transaction',
        })
      if (receipt.status !== 'success') throw new Error(`Transaction reverted: ${receipt.transactionHash}`)
      return {
        method: 'tempo',
        status: 'success',
        timestamp: new Date().toISOString(),
        reference: receipt.transactionHash,
      }
    } catch (error) {
      // Nothing sent: the claims are given back, so the same credential may be sent again.
      if (!sent) {
        if (canonicalHash && canonicalHash.toLowerCase() !== hash.toLowerCase())
          await options.store.delete(replayKey(canonicalHash))
        await options.store.delete(replayKey(hash))
      }
      throw error
    }
  }
}
