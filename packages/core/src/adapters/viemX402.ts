import {
  type Account,
  BaseError,
  type Chain,
  createWalletClient,
  encodeFunctionData,
  type Hex,
  HttpRequestError,
  http,
  keccak256,
  publicActions,
  SocketClosedError,
  TimeoutError,
  WebSocketRequestError,
  webSocket,
} from 'viem'
import { ChainUnavailableError } from '../errors.ts'
import type { X402Facilitator } from '../payments/X402.ts'
import { chainCallTimeout } from '../ports/chainBudget.ts'
import { budgetedTransport, budgetTimeout, withinChainBudget } from './budgetedTransport.ts'

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

/**
 * An X402Facilitator over viem: @x402/evm's `exact` scheme verifies (signature, payee, amount, window, a simulation
 * of `transferWithAuthorization`) and settles, with its one write made here: the transaction is signed locally, its
 * hash handed to `beforeBroadcast`, then sent. Run one settling account per process: the nonce is this process's.
 * Every call, the wait for the receipt included, shares the chain budget of the request (ports/chainBudget.ts).
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

  /**
   * @x402/evm's `exact` scheme over our client; `write` is how the one transaction of a settlement is sent. The RPC
   * faults its reads meet are kept in `faults`: the scheme answers them as refusals, which they are not.
   */
  const schemeWith = async (
    write: (call: { address: Hex; data: Hex; gas?: bigint }) => Promise<Hex>,
    faults: unknown[],
  ) => {
    const [{ toFacilitatorEvmSigner }, { ExactEvmScheme }] = await loadEvm()
    const signer = toFacilitatorEvmSigner(
      {
        address: options.account.address,
        // The scheme starts this read first and may return before awaiting it: a rejection there would be unhandled
        // and end the process, so a failed read is kept as a fault and answers "no code" (never a verdict: see verify).
        getCode: (args) =>
          client.getCode(args).catch((error: unknown) => {
            faults.push(error)
            return undefined
          }),
        readContract: (args) =>
          watched(faults, () => client.readContract({ ...args, args: args.args ?? [] } as never)),
        verifyTypedData: (args) => watched(faults, () => client.verifyTypedData(args as never)),
        writeContract: (args) =>
          write({
            address: args.address,
            data: encodeFunctionData({
              abi: args.abi,
              functionName: args.functionName,
              args: args.args,
            } as never),
            gas: args.gas,
          }),
        sendTransaction: () =>
          Promise.reject(new Error('deploying payer wallets (ERC-6492) is not supported')),
        // The wait for the receipt ends with the request's chain budget too (the settlement is then pending).
        waitForTransactionReceipt: (args) =>
          withinChainBudget(
            args.timeout ?? receiptTimeoutMs,
            (timeout) => client.waitForTransactionReceipt({ pollingInterval, ...args, timeout }),
            args,
          ),
      },
      { confirmationTimeoutMs: receiptTimeoutMs },
    )
    return new ExactEvmScheme(signer)
  }

  return {
    async verify(payload, requirements) {
      const faults: unknown[] = []
      const scheme = await schemeWith(() => Promise.reject(new Error('verification sends nothing')), faults)
      const verdict = await scheme.verify(payload as never, requirements).catch((error: unknown) => {
        throw isTransportFault(error) ? unreachable(error) : error
      })
      // A refusal reached while the RPC failed is no verdict on the payment.
      if (!verdict.isValid && faults.length > 0) throw unreachable(faults[0])
      return verdict
    },
    async settle(payload, requirements, beforeBroadcast) {
      if (requirements.network !== network) throw new Error(`this facilitator settles on ${network} only`)
      const faults: unknown[] = []
      // What stopped the settlement before its transaction was sent (the scheme answers it as a failed settlement).
      let unsent: { error: unknown } | null = null
      let broadcasting = false
      const write = ({ address, data, gas }: { address: Hex; data: Hex; gas?: bigint }) =>
        inTurn(async () => {
          try {
            return await send({ address, data, gas })
          } catch (error) {
            if (!broadcasting) unsent = { error }
            throw error
          }
        })
      const send = async ({ address, data, gas }: { address: Hex; data: Hex; gas?: bigint }) => {
        const request = await client.prepareTransactionRequest({
          to: address,
          data,
          ...(gas ? { gas } : {}),
          nonce: await client.getTransactionCount({
            address: options.account.address,
            blockTag: 'pending',
          }),
        })
        const signed = await client.signTransaction(request as never)
        const hash = keccak256(signed)
        // A request whose chain budget is spent records nothing and sends nothing: 503, the same payment may be sent again.
        if (chainCallTimeout(1) <= 0) throw budgetTimeout({ method: 'eth_sendRawTransaction' })
        await beforeBroadcast(hash)
        broadcasting = true
        await client.sendRawTransaction({ serializedTransaction: signed })
        return hash
      }
      const settled = await (await schemeWith(write, faults)).settle(payload as never, requirements)
      if (settled.success || broadcasting) return settled
      // Nothing was sent: an RPC fault or a failed record is said as itself, not as a refused payment.
      const stopped = unsent as { error: unknown } | null
      if (stopped) throw isTransportFault(stopped.error) ? unreachable(stopped.error) : stopped.error
      if (faults.length > 0) throw unreachable(faults[0])
      return settled
    },
  }
}
