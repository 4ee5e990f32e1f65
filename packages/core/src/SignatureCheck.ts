import { type Address, type Hex, isAddressEqual, recoverAddress, zeroAddress } from 'viem'
import type { ChainReader } from './ports/Chain.ts'

/**
 * Whether `signature` of `hash` is `wallet`'s: recovered from a key's signature locally, else (contract wallets:
 * ERC-1271, ERC-6492) asked of the chain when the reader can. `wrong_wallet`: a key's valid signature, by another.
 * The zero address never signs: no key holds it, and an ERC-6492 validator accepts any invalid signature for it
 * (ecrecover answers address(0) for those), so it is refused before anything is asked.
 * @example if ((await signatureOf(payer, hash, signature, chain)) === 'ok') pay()
 */
export async function signatureOf(
  wallet: Address,
  hash: Hex,
  signature: Hex,
  chain?: Pick<ChainReader, 'isValidSignature'> | null,
): Promise<'ok' | 'wrong_wallet' | 'invalid_signature'> {
  if (isAddressEqual(wallet, zeroAddress)) return 'invalid_signature'
  // Not a key's signature (a contract wallet's has another shape): the chain decides below.
  const signer = await recoverAddress({ hash, signature }).catch(() => null)
  if (signer && isAddressEqual(signer, wallet)) return 'ok'
  if (chain?.isValidSignature && (await chain.isValidSignature(wallet, hash, signature))) return 'ok'
  return signer ? 'wrong_wallet' : 'invalid_signature'
}
