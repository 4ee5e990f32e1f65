import { hashes, hexOf } from './ports/Hashes.ts'
import type { Random } from './ports/Random.ts'

/** Prefix of every API key. */
export const API_KEY_PREFIX = 'amk_'
/** Pairing codes use an alphabet without look-alikes: no 0/O, no 1/I/L. */
export const PAIRING_ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789'

/** A new API key: `amk_` + 32 random bytes in hex. Shown once, stored only as its hash. */
export function generateApiKey(random: Random): string {
  return API_KEY_PREFIX + hexOf(random.bytes(32))
}

/** SHA-256 of a secret, hex without 0x: what the store keeps instead of the secret. */
export function hashSecret(secret: string): string {
  return hashes().sha256(secret)
}

/** Compares two equal-length strings in time independent of where they differ. */
export function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false
  let difference = 0
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return difference === 0
}

/** Draws `count` characters of `alphabet` without modulo bias (rejection sampling). */
function randomCharacters(random: Random, alphabet: string, count: number): string {
  const limit = 256 - (256 % alphabet.length)
  let out = ''
  while (out.length < count) {
    for (const byte of random.bytes(count * 2)) {
      if (byte < limit && out.length < count) out += alphabet[byte % alphabet.length]
    }
  }
  return out
}

/** A new single-use pairing code, `PREFIX-XXXX-XXXX`. */
export function generatePairingCode(random: Random, prefix: string): string {
  const body = randomCharacters(random, PAIRING_ALPHABET, 8)
  return `${prefix}-${body.slice(0, 4)}-${body.slice(4)}`
}

/** A random identifier with a prefix: `ms_` + 16 random bytes in hex. */
export function generateId(random: Random, prefix: string): string {
  return prefix + hexOf(random.bytes(16))
}
