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
  /** The call data; null when it was not read (the transaction was sent to none of the addresses asked for). */
  input: Hex | null
  logs: ReceiptLog[]
}

/** A log of a contract as eth_getLogs finds it: where it happened, too. */
export type ContractLog = ReceiptLog & { transactionHash: Hex; blockNumber: bigint }

/** Read access to the payment chain. The viem adapter is the only implementation that talks to a chain. */
export type ChainReader = {
  /** The current head block number. */
  headBlock(): Promise<bigint>
  /**
   * Receipts for many hashes at once; null where the transaction is not mined. The call data (`input`) is read
   * only for transactions sent to one of `callDataFor` (escrow deposits are judged by it); a reader may read it always.
   */
  receipts(
    hashes: readonly Hex[],
    options?: { callDataFor?: readonly Address[] },
  ): Promise<(PaymentReceipt | null)[]>
  /**
   * Optional: whether the contract wallet at `signer` accepts `signature` of `hash` (ERC-1271, or ERC-6492 for a
   * wallet not deployed yet). Without it only signatures made by keys are accepted as payer proofs.
   */
  isValidSignature?(signer: Address, hash: Hex, signature: Hex): Promise<boolean>
  /**
   * Optional: the transactions, among recent blocks, in which `token` used `authorizer`'s EIP-3009 authorization
   * `nonce` (its `AuthorizationUsed` log). An x402 settlement that another transaction beat with the same
   * authorization is found this way; without it such an order waits until its re-checks run out.
   */
  authorizationUses?(token: Address, authorizer: Address, nonce: Hex): Promise<Hex[]>
  /**
   * Optional: every log `address` emitted in blocks `fromBlock` to `toBlock` (inclusive), in chain order (block, then
   * log index). The job escrow's follower reads its events this way; without it escrow jobs follow no events.
   */
  contractLogs?(address: Address, fromBlock: bigint, toBlock: bigint): Promise<ContractLog[]>
  /**
   * Optional: the `status` of job `key` on the job escrow at `contract` now, as its enum's number (0 none, 1 funded,
   * 2 submitted, 3 completed, 4 rejected, 5 expired: payments/JobEscrow.ts names them). A funding pays a task only
   * while its job is still funded; without this read, a job its seller submitted on before the market saw the funding
   * could pay a task that silence then releases to the seller.
   */
  jobStatus?(contract: Address, key: Hex): Promise<number>
}
