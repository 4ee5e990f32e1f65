import { type Address, type Hex, hashTypedData } from 'viem'
import type { ChainReader } from '../ports/Chain.ts'
import { signatureOf } from '../SignatureCheck.ts'

/**
 * The EIP-712 message a paying wallet signs to bind its payment to one order: a transfer or escrow deposit pays a
 * task only with this signature by the wallet the money came from, so an observer of the chain cannot make it pay
 * any other task. `task` is the task id, or '' for an order paid before the task exists (the order's `tx_hash`).
 */
export const PAYER_PROOF_TYPES = {
  PaymentClaim: [
    { name: 'market', type: 'string' },
    { name: 'agent', type: 'string' },
    { name: 'task', type: 'string' },
    { name: 'txHash', type: 'bytes32' },
  ],
} as const

/** The fields of a PaymentClaim; `txHash` is null in the template a task shows before it is paid. */
export type PaymentClaim = { market: string; agent: string; task: string; txHash: Hex | null }

/** The typed data a wallet signs (viem `signTypedData`, `eth_signTypedData_v4`), as tasks and cards show it. */
export type PayerProofTypedData = {
  domain: { name: 'agentmarket'; version: '1'; chainId: number }
  types: typeof PAYER_PROOF_TYPES
  primaryType: 'PaymentClaim'
  message: PaymentClaim
}

/** The typed data of a claim on the payment chain `chainId`. */
export function payerProofTypedData(chainId: number, claim: PaymentClaim): PayerProofTypedData {
  return {
    domain: { name: 'agentmarket', version: '1', chainId },
    types: PAYER_PROOF_TYPES,
    primaryType: 'PaymentClaim',
    message: claim,
  }
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
  const hash = hashTypedData(payerProofTypedData(chainId, claim) as Parameters<typeof hashTypedData>[0])
  return (await signatureOf(payer, hash, signature, chain)) === 'ok'
}
