import type { Account, Hex } from 'viem'
import type { testApp } from '../../packages/server/src/testing/http.ts'

type TestApp = Awaited<ReturnType<typeof testApp>>

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

/** verify-payment of `txHash` for the task at `taskPath`, signed by `payer` over the payer_proof the task shows now. */
export async function verifyPayment(
  app: Pick<TestApp, 'call'>,
  taskPath: string,
  payer: Pick<Account, 'signTypedData'>,
  txHash: Hex,
) {
  const proof = (await app.call('GET', taskPath)).json.payment.payer_proof
  const payerSignature = await signPayerProof(payer, proof, txHash)
  return app.call('POST', `${taskPath}/verify-payment`, {
    body: { tx_hash: txHash, payer_signature: payerSignature },
  })
}
