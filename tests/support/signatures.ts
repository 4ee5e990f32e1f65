import {
  concat,
  type Hex,
  hexToBigInt,
  numberToHex,
  parseSignature,
  serializeCompactSignature,
  signatureToCompactSignature,
} from 'viem'

/** The order of secp256k1's group: (r, n - s) with the other recovery bit signs what (r, s) signs. */
const SECP256K1_ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n

/**
 * Other encodings of one 65-byte key signature, each still a valid signature of the same digest for ecrecover or a
 * lenient verifier: `v` as 0/1 instead of 27/28, the high-`s` twin (n - s, `v` flipped), both, and EIP-2098's compact
 * 64 bytes. What an attacker who captured a signature sends to make it look like a new one.
 */
export function reencodings(signature: Hex): Record<'v01' | 'highS' | 'highSv01' | 'compact', Hex> {
  const { r, s, yParity } = parseSignature(signature)
  const highS = numberToHex(SECP256K1_ORDER - hexToBigInt(s), { size: 32 })
  const flipped = 1 - yParity
  return {
    v01: concat([r, s, numberToHex(yParity, { size: 1 })]),
    highS: concat([r, highS, numberToHex(27 + flipped, { size: 1 })]),
    highSv01: concat([r, highS, numberToHex(flipped, { size: 1 })]),
    compact: serializeCompactSignature(signatureToCompactSignature({ r, s, yParity })),
  }
}
