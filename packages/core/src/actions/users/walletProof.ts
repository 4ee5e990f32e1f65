import type { Address } from 'viem'
import { InvalidInputError, UnauthorizedError } from '../../errors.ts'
import { spendProof } from '../../ProofLedger.ts'
import type { KvStore } from '../../ports/Store.ts'
import { checkWalletProof, WALLET_PROOF_SCHEME, type WalletProof } from '../../WalletProof.ts'
import type { ActionContext, ActionPorts } from '../context.ts'

/** The request a wallet proof was made for: its method, the path the client called and its exact body bytes. */
export type ProvedRequest = { proof: WalletProof; method: string; path: string; body?: Uint8Array }

/** The WWW-Authenticate challenge of a 401 for a missing or bad wallet proof. */
export const WALLET_CHALLENGE =
  'WalletSignature realm="agentmarket", scheme="eip712", headers="X-Wallet-Signature X-Wallet-Timestamp X-Wallet-Scheme"'

/** The typed data a wallet proof of `method path` signs, spelled out for error details. */
function whatToSign(market: string, method: string, path: string): string {
  return `the EIP-712 typed data WalletRequest {market: "${market}", method: "${method.toUpperCase()}", path: "${path}", body: keccak256 of the exact body bytes (of none when there is no body), timestamp: the X-Wallet-Timestamp milliseconds} in domain {name: "agentmarket", version: "1"}`
}

/**
 * Why a signature that checks out cryptographically still does not prove `whose` wallet: a signature over other data
 * recovers to another address, so from the signature alone "another wallet" and "other data" look the same; the
 * detail names both, and what to sign.
 */
export function notThisWalletDetail(context: ActionPorts, request: ProvedRequest, whose: string): string {
  const { method, path } = request
  return `X-Wallet-Signature does not prove ${whose}: either another wallet signed, or the signed data differs from this request (a common cause: another market, method, path, body or timestamp). Sign ${whatToSign(context.config.baseUrl, method, path)} with ${whose}.`
}

/**
 * The proofs an operation takes: CONTRACT.md names the deprecated EIP-191 text for profile edits and the invite code
 * only (`eip712-or-eip191`); every other operation takes the EIP-712 proof alone.
 */
export type ProofSchemes = 'eip712' | 'eip712-or-eip191'

/** 400 for a proof without X-Wallet-Scheme: eip712 on an operation that takes only the EIP-712 proof. */
function eip712Required(context: ActionPorts, request: ProvedRequest) {
  const { method, path } = request
  return new InvalidInputError(
    'eip712_proof_required',
    `${method.toUpperCase()} ${path} takes only the EIP-712 wallet proof; the EIP-191 text proof (no X-Wallet-Scheme) is accepted for profile edits and the invite code alone. Sign ${whatToSign(context.config.baseUrl, method, path)} with the wallet (eth_signTypedData_v4); send X-Wallet-Signature, X-Wallet-Timestamp (the milliseconds) and X-Wallet-Scheme: eip712.`,
  )
}

/**
 * Whether `wallet` signed this very request (`wrong_wallet`: a valid signature by another), once: a 401 when
 * unproved, stale, or a proof already spent (the same signed digest, however its signature is encoded); a 400 for an
 * EIP-191 proof where `schemes` takes only EIP-712.
 */
export async function proveWallet(
  context: ActionContext<KvStore>,
  wallet: Address,
  request: ProvedRequest,
  schemes: ProofSchemes = 'eip712',
): Promise<'ok' | 'wrong_wallet'> {
  const { store, config, clock } = context
  const { proof, method, path } = request
  const typed = proof.scheme?.trim().toLowerCase() === WALLET_PROOF_SCHEME
  if (proof.signature && !typed && schemes === 'eip712') throw eip712Required(context, request)
  const now = clock.now()
  const target = { market: config.baseUrl, method, path, body: request.body ?? new Uint8Array() }
  const result = await checkWalletProof(wallet, proof, target, now, {
    legacy: config.walletProofLegacy,
    chain: context.chain,
  })
  if (result.ok) {
    if (await spendProof(store, wallet, result.id, result.at, now)) return 'ok'
    throw new UnauthorizedError(
      'This wallet proof was already used: sign each request afresh (a new timestamp).',
      'proof_replayed',
      WALLET_CHALLENGE,
    )
  }
  if (result.reason === 'wrong_wallet') return 'wrong_wallet'
  const details = {
    missing: `Sign ${whatToSign(config.baseUrl, method, path)} with the wallet (eth_signTypedData_v4); send X-Wallet-Signature, X-Wallet-Timestamp (the milliseconds) and X-Wallet-Scheme: eip712.`,
    stale_timestamp:
      'X-Wallet-Timestamp must be the current time (eip712: unix milliseconds; else unix seconds), at most 5 minutes old and 30 s ahead of the server clock.',
    invalid_signature:
      'X-Wallet-Signature is not a valid signature of this request (a 65-byte signature must have the low s every wallet makes).',
    legacy_refused:
      'This server takes only EIP-712 wallet proofs: send X-Wallet-Scheme: eip712 with a signature of the WalletRequest typed data.',
  }
  throw new UnauthorizedError(
    details[result.reason],
    result.reason === 'missing' ? 'wallet_proof_required' : result.reason,
    WALLET_CHALLENGE,
  )
}
