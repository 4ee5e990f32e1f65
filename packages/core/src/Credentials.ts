import { bytesToHex, sha256, stringToBytes } from 'viem'
import type { Random } from './ports/Random.ts'

/** Prefix of every API key. */
export const API_KEY_PREFIX = 'amk_'
/** Pairing codes use an alphabet without look-alikes: no 0/O, no 1/I/L. */
export const PAIRING_ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789'

/** A new API key: `amk_` + 32 random bytes in hex. Shown once, stored only as its hash. */
export function generateApiKey(random: Random): string {
  return API_KEY_PREFIX + bytesToHex(random.bytes(32)).slice(2)
}

/** SHA-256 of UTF-8 text as lower-case hex without 0x, in JavaScript (noble, through viem): runs on every host. */
const javascriptSha256 = (text: string) => sha256(stringToBytes(text)).slice(2)
let sha256Hex = javascriptSha256

/**
 * Makes `hashSecret` use the host's synchronous native SHA-256 (Bun's, node:crypto's) for the whole process: it costs a
 * tenth of the JavaScript one, a fifth of a heartbeat's CPU (bench/CHANGES.md). The function is checked against the
 * JavaScript one first, so one that hashes differently is refused instead of locking every agent out.
 * @example useNativeSha256((text) => createHash('sha256').update(text).digest('hex'))
 */
export function useNativeSha256(hash: (text: string) => string): void {
  const probe = 'agentmarket: SHA-256 probe ✓'
  if (hash(probe) !== javascriptSha256(probe))
    throw new TypeError('useNativeSha256: the function does not give SHA-256 of UTF-8 text as lower-case hex')
  sha256Hex = hash
}

/** SHA-256 of a secret, hex without 0x: what the store keeps instead of the secret. */
export function hashSecret(secret: string): string {
  return sha256Hex(secret)
}

/** HMAC-SHA256 of UTF-8 text under a UTF-8 key, lower-case hex: the host's native one, or null for Web Crypto's. */
let nativeHmacSha256: ((key: string, text: string) => string) | null = null
const webCryptoKeys = new Map<string, Promise<CryptoKey>>()
const utf8 = new TextEncoder()

/**
 * Makes `hmacSha256Hex` use the host's synchronous native HMAC-SHA256 (Bun's CryptoHasher, node:crypto's createHmac)
 * for the whole process: Web Crypto's costs a registration about 30 µs of CPU against 2 µs (bench/CHANGES.md). The
 * function is checked against RFC 4231's test vector and a key and text of more than ASCII first, so one that hashes
 * differently is refused instead of making every pairing code unspendable.
 * @example useNativeHmacSha256((key, text) => createHmac('sha256', key).update(text).digest('hex'))
 */
export function useNativeHmacSha256(hmac: (key: string, text: string) => string): void {
  const probes: [string, string, string][] = [
    [
      'Jefe',
      'what do ya want for nothing?',
      '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    ],
    ['agentmarket ✓', 'AGM-ABCD-EFGH', '273079e8a27128755f5b7eb8fb37970d94cfff3de48b7569cc2e6cfd37e6335c'],
  ]
  if (probes.some(([key, text, expected]) => hmac(key, text) !== expected))
    throw new TypeError(
      'useNativeHmacSha256: the function does not give HMAC-SHA256 of UTF-8 text as lower-case hex',
    )
  nativeHmacSha256 = hmac
}

/** HMAC-SHA256 of `text` under `key` (both UTF-8) as lower-case hex: synchronous once the host gave a native one. */
export function hmacSha256Hex(key: string, text: string): string | Promise<string> {
  if (nativeHmacSha256) return nativeHmacSha256(key, text)
  let imported = webCryptoKeys.get(key)
  if (!imported) {
    imported = crypto.subtle.importKey('raw', utf8.encode(key), { name: 'HMAC', hash: 'SHA-256' }, false, [
      'sign',
    ])
    // A process keys its HMACs with a secret or two (the pairing secret); any more are imported again.
    if (webCryptoKeys.size >= 16) webCryptoKeys.clear()
    webCryptoKeys.set(key, imported)
  }
  return imported
    .then((hmacKey) => crypto.subtle.sign('HMAC', hmacKey, utf8.encode(text)))
    .then((signature) => bytesToHex(new Uint8Array(signature)).slice(2))
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
  return prefix + bytesToHex(random.bytes(16)).slice(2)
}
