import { createPublicClient, getAddress, hexToBigInt, hexToNumber, http } from 'viem'
import { ChainUnavailableError } from '../errors.ts'
import type { ChainReader, PaymentReceipt } from '../ports/Chain.ts'

/** Options of the viem chain reader. */
export type ViemChainOptions = {
  /** The JSON-RPC endpoint; it may carry an API key, so it never appears in error messages. */
  rpcUrl: string
  /** Milliseconds one HTTP request may take before the chain counts as unavailable. @default 10_000 */
  timeoutMs?: number
  /** The most JSON-RPC calls sent in one HTTP request. @default 1_000 */
  batchSize?: number
}

/**
 * A ChainReader over batched JSON-RPC, without retries; an unreachable RPC throws ChainUnavailableError.
 * @example const chain = viemChain({ rpcUrl: 'https://mainnet.base.org' })
 */
export function viemChain(options: ViemChainOptions): ChainReader {
  const client = createPublicClient({
    transport: http(options.rpcUrl, {
      batch: { batchSize: options.batchSize ?? 1_000 },
      timeout: options.timeoutMs ?? 10_000,
      retryCount: 0,
    }),
  })

  return {
    headBlock: () => unavailableOnFailure(client.getBlockNumber({ cacheTime: 0 })),

    // viem asks the wallet contract (ERC-1271), or deploys it in a simulated call first (ERC-6492).
    isValidSignature: (signer, hash, signature) =>
      unavailableOnFailure(client.verifyHash({ address: signer, hash, signature })),

    async receipts(hashes, { callDataFor = [] } = {}) {
      // Raw requests: null instead of not-found exceptions, and no formatting of fields we do not read. Every call
      // is issued in the same tick, so the batching transport packs them into one HTTP request.
      const raw = await unavailableOnFailure(
        Promise.all(
          hashes.map((hash) => client.request({ method: 'eth_getTransactionReceipt', params: [hash] })),
        ),
      )
      // The call data only where a rule reads it (transactions to an escrow): a second, usually empty, batch.
      const wanted = new Set(callDataFor.map((address) => address.toLowerCase()))
      const inputs = await unavailableOnFailure(
        Promise.all(
          raw.map((receipt) =>
            receipt?.to && wanted.has(receipt.to.toLowerCase())
              ? client
                  .request({ method: 'eth_getTransactionByHash', params: [receipt.transactionHash] })
                  .then((transaction) => transaction?.input ?? undefined)
              : null,
          ),
        ),
      )
      return raw.map((receipt, index): PaymentReceipt | null => {
        const input = inputs[index]
        // A receipt without its wanted transaction means the node is mid-reorg: pending, asked again later.
        if (!receipt || input === undefined) return null
        return {
          transactionHash: receipt.transactionHash,
          blockNumber: hexToBigInt(receipt.blockNumber),
          status: receipt.status === '0x1' ? 'success' : 'reverted',
          from: getAddress(receipt.from),
          to: receipt.to ? getAddress(receipt.to) : null,
          input: input ?? null,
          logs: receipt.logs.map((log, index) => ({
            address: getAddress(log.address),
            topics: log.topics,
            data: log.data,
            logIndex: log.logIndex === null ? index : hexToNumber(log.logIndex),
          })),
        }
      })
    },
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
