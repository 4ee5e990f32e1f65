import {
  createPublicClient,
  type Hex,
  hexToBigInt,
  hexToNumber,
  http,
  keccak256,
  pad,
  toBytes,
  toHex,
} from 'viem'
import { ChainUnavailableError } from '../errors.ts'
import { checksummedAddress } from '../payments/Addresses.ts'
import { JOB_ESCROW_ABI } from '../payments/JobEscrow.ts'
import type { ChainReader, PaymentReceipt, ReceiptLog } from '../ports/Chain.ts'
import { budgetedTransport, withinChainBudget } from './budgetedTransport.ts'
import { jsonRpcBatcher } from './jsonRpcBatcher.ts'

/** Options of the viem chain reader. */
export type ViemChainOptions = {
  /** The JSON-RPC endpoint; it may carry an API key, so it never appears in error messages. */
  rpcUrl: string
  /** Milliseconds one HTTP request may take before the chain counts as unavailable. @default 10_000 */
  timeoutMs?: number
  /** The most JSON-RPC calls sent in one HTTP request. @default 1_000 */
  batchSize?: number
}

/** EIP-3009's `AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)`. */
const AUTHORIZATION_USED_TOPIC = keccak256(toBytes('AuthorizationUsed(address,bytes32)'))

/** How far back an authorization's use is looked for: about 11 hours of Base blocks, more than any re-check waits. */
const AUTHORIZATION_LOOKBACK_BLOCKS = 20_000n

/** A receipt log as the node sends it: the fields the rules read, and `removed`. */
type RawLog = { address: string; topics: Hex[]; data: Hex; logIndex: Hex | null; removed?: boolean }

/** A receipt as the node sends it: the fields the rules read. */
export type RawReceipt = {
  transactionHash: Hex
  blockNumber: Hex
  status: Hex
  from: string
  to: string | null
  logs: RawLog[]
}

/**
 * A ChainReader over batched JSON-RPC, without retries; an unreachable RPC throws ChainUnavailableError. Each call
 * waits at most `timeoutMs`, and inside a request's chain budget (ports/chainBudget.ts) at most what remains of it.
 * @example const chain = viemChain({ rpcUrl: 'https://mainnet.base.org' })
 */
export function viemChain(options: ViemChainOptions): ChainReader {
  const timeout = options.timeoutMs ?? 10_000
  const batchSize = options.batchSize ?? 1_000
  // The reads the rules judge go through a lean batcher (viem's transport costs more than the node on big batches);
  // signatures of contract wallets, read once per payer proof, through viem.
  const rpc = jsonRpcBatcher({ url: options.rpcUrl, timeoutMs: timeout, batchSize })
  const client = createPublicClient({
    transport: budgetedTransport(http(options.rpcUrl, { batch: { batchSize }, timeout, retryCount: 0 })),
  })
  // Concurrent checks share the head read in flight, as viem's getBlockNumber does: a head read earlier only counts
  // fewer confirmations.
  let headRead: Promise<bigint> | null = null
  const sharedHead = () => {
    if (headRead) return headRead
    const read = unavailableOnFailure(rpc.request('eth_blockNumber', [])).then((head) =>
      hexToBigInt(head as Hex),
    )
    const forget = () => {
      headRead = null
    }
    read.then(forget, forget)
    headRead = read
    return read
  }
  // A read shared with another caller still ends with this caller's chain budget.
  const headBlock = () =>
    unavailableOnFailure(withinChainBudget(timeout, sharedHead, { method: 'eth_blockNumber' }))

  return {
    headBlock,

    // viem asks the wallet contract (ERC-1271), or deploys it in a simulated call first (ERC-6492).
    isValidSignature: (signer, hash, signature) =>
      unavailableOnFailure(client.verifyHash({ address: signer, hash, signature })),

    async authorizationUses(token, authorizer, nonce) {
      const head = await headBlock()
      const fromBlock = head > AUTHORIZATION_LOOKBACK_BLOCKS ? head - AUTHORIZATION_LOOKBACK_BLOCKS : 0n
      const logs = (await unavailableOnFailure(
        rpc.request('eth_getLogs', [
          {
            address: token,
            fromBlock: toHex(fromBlock),
            toBlock: 'latest',
            topics: [AUTHORIZATION_USED_TOPIC, pad(authorizer.toLowerCase() as Hex), nonce.toLowerCase()],
          },
        ]),
      )) as (RawLog & { transactionHash: Hex })[]
      return logs.filter((log) => log.removed !== true).map((log) => log.transactionHash)
    },

    async jobStatus(contract, key) {
      const job = await unavailableOnFailure(
        client.readContract({ address: contract, abi: JOB_ESCROW_ABI, functionName: 'jobs', args: [key] }),
      )
      return job[7]
    },

    async contractLogs(address, fromBlock, toBlock) {
      const logs = (await unavailableOnFailure(
        rpc.request('eth_getLogs', [{ address, fromBlock: toHex(fromBlock), toBlock: toHex(toBlock) }]),
      )) as (RawLog & { transactionHash: Hex; blockNumber: Hex })[]
      return logs
        .filter((log) => log.removed !== true)
        .map((log) => ({
          address: checksummedAddress(log.address),
          topics: log.topics,
          data: log.data,
          logIndex: log.logIndex === null ? 0 : hexToNumber(log.logIndex),
          transactionHash: log.transactionHash,
          blockNumber: hexToBigInt(log.blockNumber),
        }))
        .sort((a, b) =>
          a.blockNumber === b.blockNumber ? a.logIndex - b.logIndex : a.blockNumber < b.blockNumber ? -1 : 1,
        )
    },

    async receipts(hashes, { callDataFor = [] } = {}) {
      // Every call is made in the same turn, so the batcher packs them (with a head read made alongside) into as
      // few HTTP requests as the batch size allows.
      const raw = (await unavailableOnFailure(
        Promise.all(hashes.map((hash) => rpc.request('eth_getTransactionReceipt', [hash]))),
      )) as (RawReceipt | null)[]
      // The call data only where a rule reads it (transactions to an escrow): a second, usually empty, batch.
      const wanted = new Set(callDataFor.map((address) => address.toLowerCase()))
      const inputs = await unavailableOnFailure(
        Promise.all(
          raw.map((receipt) =>
            receipt?.to && wanted.has(receipt.to.toLowerCase())
              ? rpc
                  .request('eth_getTransactionByHash', [receipt.transactionHash])
                  .then((transaction) => (transaction as { input?: Hex } | null)?.input ?? undefined)
              : null,
          ),
        ),
      )
      return raw.map((receipt, index): PaymentReceipt | null => {
        const input = inputs[index]
        // A receipt without its wanted transaction means the node is mid-reorg: pending, asked again later.
        if (!receipt || input === undefined) return null
        return paymentReceipt(receipt, input)
      })
    },
  }
}

/**
 * The fields the rules judge of a receipt as the node sent it, addresses checksummed. A log marked removed (undone by
 * a reorganization) is dropped: it pays nothing.
 */
export function paymentReceipt(receipt: RawReceipt, input: Hex | null): PaymentReceipt {
  const logs: ReceiptLog[] = []
  for (const [index, log] of receipt.logs.entries()) {
    if (log.removed === true) continue
    logs.push({
      address: checksummedAddress(log.address),
      topics: log.topics,
      data: log.data,
      logIndex: log.logIndex === null ? index : hexToNumber(log.logIndex),
    })
  }
  return {
    transactionHash: receipt.transactionHash,
    blockNumber: hexToBigInt(receipt.blockNumber),
    status: receipt.status === '0x1' ? 'success' : 'reverted',
    from: checksummedAddress(receipt.from),
    to: receipt.to ? checksummedAddress(receipt.to) : null,
    input,
    logs,
  }
}

/** `work`'s result; a transport failure becomes ChainUnavailableError, anything else propagates unchanged. */
async function unavailableOnFailure<T>(work: Promise<T>): Promise<T> {
  try {
    return await work
  } catch (error) {
    const reason = unavailableReason(error)
    if (reason === null) throw error
    // The cause keeps viem's details (with the URL) for logs; the message, which clients see, never has the URL.
    throw Object.assign(
      new ChainUnavailableError(
        `The payment chain cannot be reached (${reason}); nothing changed. Retry shortly.`,
      ),
      { cause: error },
    )
  }
}

/** Why `error` means the RPC is unreachable, or null when the RPC answered (e.g. a JSON-RPC error). */
function unavailableReason(error: unknown): string | null {
  // Walks the cause chain by `name`: viem wraps transport errors in RPC error classes.
  for (let current = error, depth = 0; current instanceof Error && depth < 8; depth++) {
    const status = (current as { status?: unknown }).status
    switch (current.name) {
      case 'TimeoutError':
      case 'AbortError':
        return 'timeout'
      case 'HttpRequestError':
        if (status === undefined) return 'connection failed'
        if (typeof status === 'number' && (status >= 500 || status === 429)) return `HTTP ${status}`
        return null
      case 'RpcRequestError':
        if (typeof status === 'number' && (status >= 500 || status === 429)) return `HTTP ${status}`
        break
      case 'LimitExceededRpcError':
        return 'rate limited'
    }
    current = current.cause
  }
  return null
}
