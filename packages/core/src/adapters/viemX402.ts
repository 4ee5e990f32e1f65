import {
  type Account,
  BaseError,
  type Chain,
  createWalletClient,
  type EIP1193RequestFn,
  encodeFunctionData,
  getAddress,
  type Hex,
  HttpRequestError,
  http,
  isAddressEqual,
  keccak256,
  type PublicRpcSchema,
  parseAbi,
  parseErc6492Signature,
  parseEventLogs,
  parseSignature,
  publicActions,
  SocketClosedError,
  size,
  TimeoutError,
  WaitForTransactionReceiptTimeoutError,
  WebSocketRequestError,
  webSocket,
} from 'viem'
import { ChainUnavailableError } from '../errors.ts'
import { TRANSFER_EVENT_ABI } from '../payments/Verifier.ts'
import {
  type Eip3009Authorization,
  type PaymentPayload,
  type PaymentRequirements,
  type SettleResponse,
  TRANSFER_WITH_AUTHORIZATION_ABI,
  type X402Facilitator,
} from '../payments/X402.ts'
import type { ChainReader, PaymentReceipt } from '../ports/Chain.ts'
import { chainCallTimeout } from '../ports/chainBudget.ts'
import { budgetedTransport, budgetTimeout, withinChainBudget } from './budgetedTransport.ts'
import { paymentReceipt, type RawReceipt } from './viemChain.ts'

/** Options of the viem x402 facilitator. */
export type ViemX402Options = {
  /** The payment chain's JSON-RPC endpoint (it may carry an API key: it never appears in messages). */
  rpcUrl: string
  /** The chain (its id signs the settlement transactions). */
  chain: Chain
  /** The local account that submits settlements and pays their gas; it never holds buyers' money. */
  account: Account
  /** Milliseconds a settlement waits for its receipt before it counts as pending. @default 30_000 */
  receiptTimeoutMs?: number
  /**
   * How often the settlement's receipt is asked for, in ms (default 250). viem's default for a chain it knows no block
   * time of is 4 s, and it caches the block number as long, so a settlement mined at once waited up to 4 s under
   * concurrent orders (bench/reference.ts: agentmarket's x402 p99 4.4 s, the reference's as much with that default).
   */
  receiptPollMs?: number
}

/** How often a settlement's receipt is asked for when the options name no interval. */
const DEFAULT_RECEIPT_POLL_MS = 250

/**
 * The first pauses between receipt reads, before the interval: a node that mines each transaction at once (anvil)
 * may answer the send a moment before it stores the block, and a wait of a whole interval then holds the order.
 */
const QUICK_POLLS_MS = [10, 25, 50, 100]

// @x402/evm (about 60 ms to load) loads on the first x402 payment, not when the server starts.
let library: Promise<[typeof import('@x402/evm'), typeof import('@x402/evm/exact/facilitator')]> | null = null
const loadEvm = () => {
  library ??= Promise.all([import('@x402/evm'), import('@x402/evm/exact/facilitator')])
  return library
}

/** One at a time: the pending nonce is read, the transaction signed, recorded and sent before the next is signed. */
function serialized() {
  let tail: Promise<unknown> = Promise.resolve()
  return <T>(work: () => Promise<T>): Promise<T> => {
    const run = tail.then(work, work)
    tail = run.catch(() => undefined)
    return run
  }
}

/** True when `error` is the RPC not answering (down, refused, timed out), not the chain's verdict on a call. */
function isTransportFault(error: unknown): boolean {
  const faults = [HttpRequestError, TimeoutError, WebSocketRequestError, SocketClosedError]
  if (!(error instanceof BaseError)) return false
  return error.walk((cause) => faults.some((kind) => cause instanceof kind)) !== null
}

/** Runs `call`, keeping the first RPC fault it meets in `faults` (the scheme turns errors into plain verdicts). */
function watched<T>(faults: unknown[], call: () => Promise<T>): Promise<T> {
  return call().catch((error: unknown) => {
    if (isTransportFault(error)) faults.push(error)
    throw error
  })
}

/** 503 `chain_unavailable` for a verdict reached while the RPC was failing: nothing was sent. */
const unreachable = (cause: unknown) =>
  new ChainUnavailableError(
    'The payment chain cannot be reached right now; nothing was sent and nothing changed. Retry shortly with the same payment.',
    { cause },
  )

/** 503 for a settlement the node would not run though the payment still verifies: nothing was sent. */
const unsettledNow = (cause: unknown) =>
  new ChainUnavailableError(
    'The payment chain would not take the settlement right now (a transaction under way may use this authorization); nothing was sent and nothing changed. Retry shortly with the same payment.',
    { cause },
  )

/**
 * The node would not run the settlement (its fill, the gas estimate, reverted): nothing was signed or sent. The
 * payment may have stopped verifying since it was verified (its authorization used, its payer's balance spent).
 */
class FillReverted extends Error {}

/** The EIP-3009 call of a settlement: an ECDSA signature split (v, r, s), any other (a contract wallet's) as bytes. */
const [SPLIT_SIGNATURE, BYTES_SIGNATURE] = TRANSFER_WITH_AUTHORIZATION_ABI.map((item) => [item])

/** x402's settlement failures, as `@x402/evm`'s exact scheme names them in a SettleResponse. */
const SETTLE_ERRORS = {
  failed: 'invalid_exact_evm_transaction_failed',
  mismatch: 'invalid_exact_evm_transfer_event_mismatch',
  pending: 'settlement_pending',
  nonceUsed: 'invalid_exact_evm_nonce_already_used',
  insufficientBalance: 'invalid_exact_evm_insufficient_balance',
} as const

/** The token's reads that say why an authorization no longer settles: its nonce used, its payer's balance. */
const PAYER_STATE_ABI = parseAbi([
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
  'function balanceOf(address account) view returns (uint256)',
])

/** The call data that settles `authorization` signed with `signed` (an ERC-6492 wrapper settles its inner signature). */
function settlementCall(authorization: Eip3009Authorization, signed: Hex): Hex {
  const { signature } = parseErc6492Signature(signed)
  const fields = [
    getAddress(authorization.from),
    getAddress(authorization.to),
    BigInt(authorization.value),
    BigInt(authorization.validAfter),
    BigInt(authorization.validBefore),
    authorization.nonce,
  ] as const
  if (size(signature) !== 65)
    return encodeFunctionData({ abi: BYTES_SIGNATURE, args: [...fields, signature] } as never)
  const { r, s, v, yParity } = parseSignature(signature)
  const recovery = Number(v ?? 27n + BigInt(yParity))
  return encodeFunctionData({ abi: SPLIT_SIGNATURE, args: [...fields, recovery, r, s] } as never)
}

/** Why a mined settlement did not pay `authorization` in `asset` (its failure), or null when its Transfer log shows it. */
function receiptFailure(receipt: PaymentReceipt, asset: Hex, authorization: Eip3009Authorization) {
  if (receipt.status !== 'success') return SETTLE_ERRORS.failed
  const transfers = parseEventLogs({
    abi: TRANSFER_EVENT_ABI,
    logs: receipt.logs.filter((log) => isAddressEqual(log.address, asset)) as never,
  })
  const paid = transfers.some(
    ({ args }) =>
      isAddressEqual(args.from, authorization.from) &&
      isAddressEqual(args.to, authorization.to) &&
      args.value === BigInt(authorization.value),
  )
  return paid ? null : SETTLE_ERRORS.mismatch
}

/**
 * An X402Facilitator over viem: @x402/evm's `exact` scheme verifies (signature, payee, amount, window, a simulation
 * of `transferWithAuthorization`) and the settlement is made here: its transaction signed locally, its hash handed to
 * `beforeBroadcast`, then sent, its receipt read until it shows the transfer. A payload this facilitator verified
 * against the same requirements is settled without verifying it again (the scheme's own settle would: a second
 * signature recovery and payer reads per payment); any other is verified first. A settlement the node will not run
 * (its fill reverts: the authorization used or the payer's balance spent since it was verified) sends nothing and
 * answers the scheme's reason, as a verification would now. Run one settling account per
 * process: the nonce is this process's. Every call, the wait for the receipt included, shares the chain budget of the
 * request (ports/chainBudget.ts).
 * @example const facilitator = viemX402Facilitator({ rpcUrl, chain: base, account: privateKeyToAccount(key) })
 */
export function viemX402Facilitator(options: ViemX402Options): X402Facilitator {
  const client = createWalletClient({
    account: options.account,
    chain: options.chain,
    transport: budgetedTransport(
      /^wss?:/i.test(options.rpcUrl)
        ? webSocket(options.rpcUrl, { retryCount: 0 })
        : http(options.rpcUrl, { retryCount: 0 }),
    ),
  }).extend(publicActions)
  const inTurn = serialized()
  const receiptTimeoutMs = options.receiptTimeoutMs ?? 30_000
  const pollingInterval = options.receiptPollMs ?? DEFAULT_RECEIPT_POLL_MS
  const network = `eip155:${options.chain.id}` as const
  // What each payload verified valid was checked against (its payload and requirements), until it is settled.
  const verified = new WeakMap<PaymentPayload, string>()
  const checked = (payload: PaymentPayload, requirements: PaymentRequirements) =>
    JSON.stringify([payload.payload, requirements])

  /**
   * @x402/evm's `exact` scheme over our client, for verification (it sends nothing). The RPC faults its reads meet
   * are kept in `faults`: the scheme answers them as refusals, which they are not.
   */
  const schemeWith = async (faults: unknown[]) => {
    const [{ toFacilitatorEvmSigner }, { ExactEvmScheme }] = await loadEvm()
    // The scheme reads the payer's code twice (is it a contract wallet, then whose signature to check): once here.
    const codes = new Map<string, Promise<Hex | undefined>>()
    const signer = toFacilitatorEvmSigner({
      address: options.account.address,
      // The scheme starts this read first and may return before awaiting it: a rejection there would be unhandled
      // and end the process, so a failed read is kept as a fault and answers "no code" (never a verdict: see verify).
      getCode: (args) => {
        const key = args.address.toLowerCase()
        const read =
          codes.get(key) ??
          client.getCode(args).catch((error: unknown) => {
            faults.push(error)
            return undefined
          })
        codes.set(key, read)
        return read
      },
      readContract: (args) =>
        watched(faults, () => client.readContract({ ...args, args: args.args ?? [] } as never)),
      verifyTypedData: (args) => watched(faults, () => client.verifyTypedData(args as never)),
      writeContract: () => Promise.reject(new Error('verification sends nothing')),
      sendTransaction: () => Promise.reject(new Error('verification sends nothing')),
      waitForTransactionReceipt: () => Promise.reject(new Error('verification sends nothing')),
    })
    return new ExactEvmScheme(signer)
  }

  /** The scheme's verdict on `payload` against `requirements`; 503 when a refusal met an RPC fault. */
  const verify = async (payload: PaymentPayload, requirements: PaymentRequirements) => {
    const faults: unknown[] = []
    const scheme = await schemeWith(faults)
    const verdict = await scheme.verify(payload as never, requirements).catch((error: unknown) => {
      throw isTransportFault(error) ? unreachable(error) : error
    })
    // A refusal reached while the RPC failed is no verdict on the payment.
    if (!verdict.isValid && faults.length > 0) throw unreachable(faults[0])
    return verdict
  }

  /**
   * Why a settlement whose fill reverted (`reverted`) pays nothing, read from the token (the scheme's own diagnosis
   * needs Multicall3): its authorization used, or its payer's balance short, since it was verified; else the scheme's
   * reason when the payment no longer verifies. When it still verifies, the fault is the settler's own and the fill's
   * error is thrown.
   */
  const revertedBecause = async (
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    reverted: FillReverted,
  ): Promise<string> => {
    const { from, nonce, value } = (payload.payload as { authorization: Eip3009Authorization }).authorization
    const address = getAddress(requirements.asset)
    const read = <T>(call: () => Promise<T>) =>
      call().catch((error: unknown) => {
        throw isTransportFault(error) ? unreachable(error) : reverted.cause
      })
    // Read where the fill ran: the pending state holds a transaction under way that uses the authorization.
    const [used, balance] = await Promise.all([
      read(() =>
        client.readContract({
          address,
          abi: PAYER_STATE_ABI,
          functionName: 'authorizationState',
          args: [getAddress(from), nonce],
          blockTag: 'pending',
        }),
      ),
      read(() =>
        client.readContract({
          address,
          abi: PAYER_STATE_ABI,
          functionName: 'balanceOf',
          args: [getAddress(from)],
          blockTag: 'pending',
        }),
      ),
    ])
    if (used) return SETTLE_ERRORS.nonceUsed
    if (balance < BigInt(value)) return SETTLE_ERRORS.insufficientBalance
    const verdict = await verify(payload, requirements)
    // Valid by every reading, yet the node would not run it (a node whose pending state is not readable, a
    // transaction under way): nothing was sent, so the same payment may be tried again shortly.
    if (verdict.isValid) throw unsettledNow(reverted.cause)
    return verdict.invalidReason ?? SETTLE_ERRORS.failed
  }

  /** The settlement's receipt as the node sent it (viem's formatting of every field is not needed to read two). */
  const ownReceipt = async (hash: Hex) => {
    const raw = (await (client.request as EIP1193RequestFn<PublicRpcSchema>)({
      method: 'eth_getTransactionReceipt',
      params: [hash],
    })) as RawReceipt | null
    return raw && paymentReceipt(raw, null)
  }

  /**
   * The settlement's receipt, read every `pollingInterval` until it is mined, within the request's chain budget: by
   * the caller's chain reader when it lends one (the caller then judges what its own reader returned), else here.
   */
  const receiptOf = (hash: Hex, chain?: Pick<ChainReader, 'receipts'>) =>
    withinChainBudget(
      receiptTimeoutMs,
      async (timeoutMs) => {
        const deadline = Date.now() + timeoutMs
        const read = chain ? async () => (await chain.receipts([hash]))[0] ?? null : () => ownReceipt(hash)
        let polls = 0
        for (;;) {
          const receipt = await read()
          if (receipt) return receipt
          const pause = Math.min(pollingInterval, QUICK_POLLS_MS[polls++] ?? pollingInterval)
          if (Date.now() + pause > deadline) throw new WaitForTransactionReceiptTimeoutError({ hash })
          await new Promise((resolve) => setTimeout(resolve, pause))
        }
      },
      { method: 'eth_getTransactionReceipt', hash },
    )

  /** The signed settlement: by the local key itself (viem's action would ask the node for its chain id first). */
  const sign = (request: object): Promise<Hex> => {
    const { account } = options
    if (account.type !== 'local') return client.signTransaction(request as never)
    return account.signTransaction(request as never, {
      serializer: options.chain.serializers?.transaction,
    })
  }

  return {
    async verify(payload, requirements) {
      const verdict = await verify(payload, requirements)
      if (verdict.isValid) verified.set(payload, checked(payload, requirements))
      else verified.delete(payload)
      return verdict
    },
    async settle(payload, requirements, beforeBroadcast, chain) {
      if (requirements.network !== network) throw new Error(`this facilitator settles on ${network} only`)
      const { authorization, signature } = payload.payload as {
        authorization: Eip3009Authorization
        signature: Hex
      }
      const answer = (errorReason: string | null, transaction = ''): SettleResponse => ({
        success: errorReason === null,
        ...(errorReason === null ? {} : { errorReason }),
        transaction,
        network: requirements.network,
        payer: authorization.from,
      })
      // Verified moments ago against these requirements (payWithX402 verifies, claims, then settles): checked once.
      const fresh = verified.get(payload) === checked(payload, requirements)
      verified.delete(payload)
      if (!fresh) {
        const verdict = await verify(payload, requirements)
        if (!verdict.isValid) return answer(verdict.invalidReason ?? SETTLE_ERRORS.failed)
      }
      const asset = getAddress(requirements.asset)
      let broadcasting = false
      const send = async (data: Hex) => {
        // The nonce is the account's pending count: the node fills it with the gas and fees in one call when it can
        // (eth_fillTransaction), else viem reads each.
        const request = await client
          .prepareTransactionRequest({ to: asset, data })
          .catch((error: unknown) => {
            throw isTransportFault(error)
              ? error
              : new FillReverted('the settlement reverted', { cause: error })
          })
        const signed = await sign(request)
        const hash = keccak256(signed)
        // A request whose chain budget is spent records nothing and sends nothing: 503, the same payment may be sent again.
        if (chainCallTimeout(1) <= 0) throw budgetTimeout({ method: 'eth_sendRawTransaction' })
        await beforeBroadcast(hash)
        broadcasting = true
        await client.sendRawTransaction({ serializedTransaction: signed })
        return hash
      }
      let hash: Hex
      try {
        hash = await inTurn(() => send(settlementCall(authorization, signature)))
      } catch (error) {
        // Nothing was sent and the node would not run it: the payment is refused when it no longer verifies.
        if (error instanceof FillReverted) return answer(await revertedBecause(payload, requirements, error))
        // Nothing was sent: an RPC fault or a failed record is said as itself, not as a refused payment.
        if (!broadcasting) throw isTransportFault(error) ? unreachable(error) : error
        // Recorded, and the send's answer lost: the caller asks the chain.
        return answer(SETTLE_ERRORS.failed)
      }
      const receipt = await receiptOf(hash, chain).catch(() => null)
      if (!receipt) return answer(SETTLE_ERRORS.pending, hash)
      return answer(receiptFailure(receipt, asset, authorization), hash)
    },
  }
}
