import type { Address, Hex } from 'viem'
import { PAYER_PROOF_TYPES } from '../MarketMessageTypes.ts'
import { type MarketTypedData, marketTypedData, signedByWallet } from '../MarketTypedData.ts'
import type { ChainReader } from '../ports/Chain.ts'

/**
 * The EIP-712 message a paying wallet signs to bind its payment to one order: a transfer or escrow deposit pays a
 * task only with this signature by the wallet the money came from, so an observer of the chain cannot make it pay
 * any other task. `task` is the task id, or '' for an order paid before the task exists (the order's `tx_hash`).
 */
export { PAYER_PROOF_TYPES }

/** The fields of a PaymentClaim; `txHash` is null in the template a task shows before it is paid. */
export type PaymentClaim = { market: string; agent: string; task: string; txHash: Hex | null }

/** The typed data a wallet signs (viem `signTypedData`, `eth_signTypedData_v4`), as tasks and cards show it. */
export type PayerProofTypedData = MarketTypedData<typeof PAYER_PROOF_TYPES, 'PaymentClaim', PaymentClaim>

/** The typed data of a claim on the payment chain `chainId`. */
export function payerProofTypedData(chainId: number, claim: PaymentClaim): PayerProofTypedData {
  return marketTypedData(chainId, PAYER_PROOF_TYPES, 'PaymentClaim', claim)
}

/**
 * True when `signature` is `payer`'s signature of the claim: recovered from a key's signature locally, else (contract
 * wallets: ERC-1271, ERC-6492) asked of the chain when the reader can.
 * @example await isPayerProof(chain, from, 8453, { market, agent: 'scout', task: id, txHash }, signature)
 */
export async function isPayerProof(
  chain: ChainReader,
  payer: Address,
  chainId: number,
  claim: PaymentClaim & { txHash: Hex },
  signature: Hex,
): Promise<boolean> {
  // A mint's Transfer comes from the zero address: signatureOf refuses it, so nobody can prove it paid.
  return signedByWallet(chain, payer, payerProofTypedData(chainId, claim), signature)
}
