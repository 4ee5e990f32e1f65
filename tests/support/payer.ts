import type { Account, Hex } from 'viem'

/** The typed data a task (payment.payer_proof) or an agent card (commerce.payer_proof) shows, as JSON. */
export type ServedPayerProof = {
  domain: { name: string; version: string; chainId: number }
  types: Record<string, { name: string; type: string }[]>
  primaryType: string
  message: Record<string, unknown>
}

/**
 * What an honest buyer does after paying: sign the served payer_proof with the paying wallet, `txHash` filled in.
 * @example await signPayerProof(buyer, task.payment.payer_proof, hash)
 */
export async function signPayerProof(
  account: Pick<Account, 'signTypedData'>,
  proof: ServedPayerProof,
  txHash: Hex,
): Promise<Hex> {
  if (!account.signTypedData) throw new Error('this account cannot sign typed data')
  return account.signTypedData({
    domain: proof.domain,
    types: proof.types,
    primaryType: proof.primaryType,
    message: { ...proof.message, txHash },
  } as Parameters<NonNullable<Account['signTypedData']>>[0])
}
