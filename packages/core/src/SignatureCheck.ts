import {
  type Address,
  type Hex,
  hexToBigInt,
  isAddressEqual,
  parseSignature,
  recoverAddress,
  zeroAddress,
} from 'viem'
import type { ChainReader } from './ports/Chain.ts'

/** Half the order of secp256k1: a key's signature with a larger `s` is the malleated twin of a valid one (EIP-2). */
const SECP256K1_HALF_ORDER = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n

/**
 * True for a 65-byte signature whose `s` is in the upper half: n - s, with `v` flipped, signs the same digest, but no
 * wallet makes it (every signer normalises to low `s`), so only someone re-encoding another's signature sends one.
 */
export function isHighS(signature: Hex): boolean {
  if (signature.length !== 132) return false
  try {
    return hexToBigInt(parseSignature(signature).s) > SECP256K1_HALF_ORDER
  } catch {
    return false
  }
}

/**
 * Whether `signature` of `hash` is `wallet`'s: recovered from a key's signature locally, else (contract wallets:
 * ERC-1271, ERC-6492) asked of the chain when the reader can. `wrong_wallet`: a key's valid signature, by another.
 * The zero address never signs: no key holds it, and an ERC-6492 validator accepts any invalid signature for it
 * (ecrecover answers address(0) for those), so it is refused before anything is asked. A high-`s` signature is
 * refused before anything is asked too: it is a re-encoding, never what a wallet signed.
 * @example if ((await signatureOf(payer, hash, signature, chain)) === 'ok') pay()
 */
export async function signatureOf(
  wallet: Address,
  hash: Hex,
  signature: Hex,
  chain?: Pick<ChainReader, 'isValidSignature'> | null,
): Promise<'ok' | 'wrong_wallet' | 'invalid_signature'> {
  if (isAddressEqual(wallet, zeroAddress) || isHighS(signature)) return 'invalid_signature'
  // Not a key's signature (a contract wallet's has another shape): the chain decides below.
  const signer = await recoverAddress({ hash, signature }).catch(() => null)
  if (signer && isAddressEqual(signer, wallet)) return 'ok'
  if (chain?.isValidSignature && (await chain.isValidSignature(wallet, hash, signature))) return 'ok'
  return signer ? 'wrong_wallet' : 'invalid_signature'
}
