import type { Address, Hex } from 'viem'

/** One log of a receipt, as the chain returned it. */
export type ReceiptLog = { address: Address; topics: Hex[]; data: Hex; logIndex: number }

/** A mined transaction receipt with its call data: everything the payment rules judge. */
export type PaymentReceipt = {
  transactionHash: Hex
  blockNumber: bigint
  status: 'success' | 'reverted'
  from: Address
  to: Address | null
  input: Hex
  logs: ReceiptLog[]
}

/** Read access to the payment chain. The viem adapter is the only implementation that talks to a chain. */
export type ChainReader = {
  /** The current head block number. */
  headBlock(): Promise<bigint>
  /** Receipts (with call data) for many hashes at once; null where the transaction is not mined. */
  receipts(hashes: readonly Hex[]): Promise<(PaymentReceipt | null)[]>
}
