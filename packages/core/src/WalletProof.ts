import { type Address, type Hex, isAddressEqual, isHex, recoverMessageAddress, verifyMessage } from 'viem'

/** How far the signed timestamp may be from the server's clock. */
export const WALLET_PROOF_WINDOW_SECONDS = 5 * 60

/** What a client sends to prove it holds a wallet: headers X-Wallet-Signature and X-Wallet-Timestamp. */
export type WalletProof = { signature: string | undefined; timestamp: string | undefined }

/** The outcome of checking a proof. */
export type WalletProofResult =
  | { ok: true }
  | { ok: false; reason: 'missing' | 'stale_timestamp' | 'invalid_signature' | 'wrong_wallet' }

/** The exact text a wallet signs (EIP-191) to prove itself for one request. */
export function walletProofMessage(method: string, path: string, timestamp: string): string {
  return `agentmarket:${method.toUpperCase()}:${path}:${timestamp}`
}

/**
 * Checks that `wallet` signed `agentmarket:{METHOD}:{path}:{timestamp}` within 5 minutes of `now`.
 * @example await checkWalletProof(user.walletAddress, { signature, timestamp }, 'PUT', '/api/community/users/ann', now)
 */
export async function checkWalletProof(
  wallet: Address,
  proof: WalletProof,
  method: string,
  path: string,
  now: Date,
): Promise<WalletProofResult> {
  const { signature, timestamp } = proof
  if (!signature || !timestamp) return { ok: false, reason: 'missing' }
  if (
    !/^\d{1,12}$/.test(timestamp) ||
    Math.abs(Number(timestamp) - now.getTime() / 1000) > WALLET_PROOF_WINDOW_SECONDS
  ) {
    return { ok: false, reason: 'stale_timestamp' }
  }
  if (!isHex(signature) || signature.length !== 132) return { ok: false, reason: 'invalid_signature' }
  const message = walletProofMessage(method, path, timestamp)
  if (await verifyMessage({ address: wallet, message, signature: signature as Hex }).catch(() => false))
    return { ok: true }
  const signer = await recoverMessageAddress({ message, signature: signature as Hex }).catch(() => null)
  if (!signer) return { ok: false, reason: 'invalid_signature' }
  return isAddressEqual(signer, wallet) ? { ok: true } : { ok: false, reason: 'wrong_wallet' }
}
