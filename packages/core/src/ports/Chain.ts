import type { Address, Hex } from 'viem'

/** A USDC Transfer log as the payment rules see it. */
export type TransferLog = { token: Address; from: Address; to: Address; value: bigint; logIndex: number }

/** A mined transaction receipt reduced to what payment verification needs. */
export type PaymentReceipt = {
  transactionHash: Hex
  blockNumber: bigint
  status: 'success' | 'reverted'
  to: Address | null
  input: Hex
  transfers: TransferLog[]
}

/** Read access to the payment chain. The viem adapter is the only implementation that talks to a chain. */
export type ChainReader = {
  /** The current head block number. */
  headBlock(): Promise<bigint>
  /** Receipts for many hashes at once (null: not mined yet). */
  receipts(hashes: readonly Hex[]): Promise<(PaymentReceipt | null)[]>
}
