import { type Address, type Hex, hashMessage, hashTypedData, isHex, keccak256 } from 'viem'
import { WALLET_PROOF_TYPES } from './MarketMessageTypes.ts'
import type { ChainReader } from './ports/Chain.ts'
import { signatureOf } from './SignatureCheck.ts'

/** How old a signed timestamp may be. */
export const WALLET_PROOF_WINDOW_SECONDS = 5 * 60
/** How far ahead of the server's clock a signed timestamp may be (clock skew), no more. */
export const WALLET_PROOF_SKEW_SECONDS = 30

/** The X-Wallet-Scheme value of the current proof: EIP-712 typed data binding market, request and body. */
export const WALLET_PROOF_SCHEME = 'eip712'

/**
 * The EIP-712 request a wallet signs to prove itself (X-Wallet-Scheme: eip712): the marketplace (its BASE_URL), the
 * method, the path, keccak256 of the exact body bytes (of no bytes when there is none) and the time in milliseconds.
 */
export { WALLET_PROOF_TYPES }

/** What a client sends to prove it holds a wallet: X-Wallet-Signature, X-Wallet-Timestamp and X-Wallet-Scheme. */
export type WalletProof = {
  signature: string | undefined
  timestamp: string | undefined
  /** `eip712` for the current proof; absent for the deprecated EIP-191 text (unix seconds). */
  scheme?: string | undefined
}

/** The request a proof must be made for. */
export type ProofTarget = { market: string; method: string; path: string; body: Uint8Array }

/**
 * The outcome of checking a proof. `id` names the proof for the accepted-once check: the digest the wallet signed (the
 * EIP-712 or EIP-191 hash), never the signature bytes, so no re-encoding of a signature (v as 0/1, compact form, a
 * contract wallet's many valid signatures, an ERC-6492 wrapper) is a new proof. `at` is its time (ms).
 */
export type WalletProofResult =
  | { ok: true; id: Hex; at: number }
  | {
      ok: false
      reason: 'missing' | 'stale_timestamp' | 'invalid_signature' | 'wrong_wallet' | 'legacy_refused'
    }

/** The typed data of a request, as a wallet is asked to sign it (eth_signTypedData_v4). */
export function walletProofTypedData(target: ProofTarget, timestampMs: bigint) {
  return {
    domain: { name: 'agentmarket', version: '1' },
    types: WALLET_PROOF_TYPES,
    primaryType: 'WalletRequest' as const,
    message: {
      market: target.market,
      method: target.method.toUpperCase(),
      path: target.path,
      body: keccak256(target.body),
      timestamp: timestampMs,
    },
  }
}

/** The exact text a wallet signs (EIP-191) for the deprecated proof: no market, no body. */
export function walletProofMessage(method: string, path: string, timestamp: string): string {
  return `agentmarket:${method.toUpperCase()}:${path}:${timestamp}`
}

/** Whether `at` (ms) is at most WALLET_PROOF_WINDOW_SECONDS old and WALLET_PROOF_SKEW_SECONDS ahead of `now`. */
const fresh = (at: number, now: Date) =>
  at <= now.getTime() + WALLET_PROOF_SKEW_SECONDS * 1000 &&
  at >= now.getTime() - WALLET_PROOF_WINDOW_SECONDS * 1000

/** `chain`'s signature check, answering no when the node cannot answer: a proof is refused, never a 503. */
function noOnFailure(
  chain?: Pick<ChainReader, 'isValidSignature'> | null,
): Pick<ChainReader, 'isValidSignature'> | null {
  const check = chain?.isValidSignature?.bind(chain)
  return check ? { isValidSignature: (...args) => check(...args).catch(() => false) } : null
}

/**
 * Checks that `wallet` signed this request: with X-Wallet-Scheme eip712, the typed data of `target` (market, method,
 * path, body digest) at a millisecond timestamp; else, when `legacy` allows it, the EIP-191 text at unix seconds.
 * Either way the timestamp may be at most 5 minutes old and 30 s ahead. The caller makes it accepted once (`id`).
 * @example await checkWalletProof(user.walletAddress, proof, { market, method: 'PUT', path, body }, now)
 */
export async function checkWalletProof(
  wallet: Address,
  proof: WalletProof,
  target: ProofTarget,
  now: Date,
  options: { legacy?: boolean; chain?: Pick<ChainReader, 'isValidSignature'> | null } = {},
): Promise<WalletProofResult> {
  const { signature, timestamp, scheme } = proof
  if (!signature || !timestamp) return { ok: false, reason: 'missing' }
  if (!isHex(signature) || signature.length < 132 || signature.length > 16_386)
    return { ok: false, reason: 'invalid_signature' }
  const typed = scheme?.trim().toLowerCase() === WALLET_PROOF_SCHEME
  if (!typed && options.legacy === false) return { ok: false, reason: 'legacy_refused' }
  if (!(typed ? /^\d{1,15}$/ : /^\d{1,12}$/).test(timestamp)) return { ok: false, reason: 'stale_timestamp' }
  const at = typed ? Number(timestamp) : Number(timestamp) * 1000
  if (!fresh(at, now)) return { ok: false, reason: 'stale_timestamp' }
  const hash = typed
    ? hashTypedData(walletProofTypedData(target, BigInt(timestamp)))
    : hashMessage(walletProofMessage(target.method, target.path, timestamp))
  // The EIP-191 proof predates contract wallets here: a key's 65-byte signature only.
  if (!typed && signature.length !== 132) return { ok: false, reason: 'invalid_signature' }
  const outcome = await signatureOf(wallet, hash, signature, typed ? noOnFailure(options.chain) : null)
  return outcome === 'ok' ? { ok: true, id: hash, at } : { ok: false, reason: outcome }
}
