import { bytesToHex, sha256, stringToBytes } from 'viem'
import { withoutTrailing } from '../Trim.ts'

/** How a digest is written: lower-case hex without 0x, or base64url without padding. */
export type DigestEncoding = 'hex' | 'base64url'

/**
 * The hashes core takes on hot paths (key digests, pairing codes, MPP challenge ids and order bodies). A host with
 * synchronous native ones (Bun's CryptoHasher, node:crypto) installs them once with `useNativeHashes`.
 */
export type Hashes = {
  /** SHA-256 of UTF-8 `text`, as lower-case hex without 0x. */
  sha256(text: string): string
  /** HMAC-SHA256 of UTF-8 `text` under a UTF-8 `key`, written in `encoding`. */
  hmacSha256(key: string, text: string, encoding: DigestEncoding): string | Promise<string>
}

/** The runtime's own base64 of bytes (TC39 Uint8Array base64: Bun, recent Node), when it has one. */
type NativeBase64 = { toBase64?(options: { alphabet: 'base64url'; omitPadding: boolean }): string }

/** The runtime's own hex of bytes (TC39 Uint8Array.prototype.toHex), when it has one. */
type NativeHex = { toHex?(): string }

/** Lower-case hex of `bytes` without 0x: natively where the runtime can (every new id writes one), else by viem. */
export function hexOf(bytes: Uint8Array): string {
  const native = (bytes as NativeHex).toHex
  return native ? native.call(bytes) : bytesToHex(bytes).slice(2)
}

/** base64url without padding of `bytes`: natively where the runtime can (each 402 writes two), else by btoa. */
export function base64Url(bytes: Uint8Array): string {
  const native = (bytes as NativeBase64).toBase64
  if (native) return native.call(bytes, { alphabet: 'base64url', omitPadding: true })
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return withoutTrailing(btoa(binary).replaceAll('+', '-').replaceAll('/', '_'), '=')
}

const utf8 = new TextEncoder()
const webCryptoKeys = new Map<string, Promise<CryptoKey>>()

/** The HMAC key `key` imported into Web Crypto, once per key. */
function webCryptoKey(key: string): Promise<CryptoKey> {
  let imported = webCryptoKeys.get(key)
  if (!imported) {
    imported = crypto.subtle.importKey('raw', utf8.encode(key), { name: 'HMAC', hash: 'SHA-256' }, false, [
      'sign',
    ])
    // A process keys its HMACs with a secret or two (pairing, MPP); any more are imported again.
    if (webCryptoKeys.size >= 16) webCryptoKeys.clear()
    webCryptoKeys.set(key, imported)
  }
  return imported
}

/**
 * The hashes every host has: SHA-256 in JavaScript (noble, through viem), HMAC-SHA256 by Web Crypto (each key
 * imported once).
 */
export const portableHashes: Hashes = {
  sha256: (text) => sha256(stringToBytes(text)).slice(2),
  async hmacSha256(key, text, encoding) {
    const signature = new Uint8Array(
      await crypto.subtle.sign('HMAC', await webCryptoKey(key), utf8.encode(text)),
    )
    return encoding === 'hex' ? bytesToHex(signature).slice(2) : base64Url(signature)
  },
}

let installed: Hashes = portableHashes

/** What a native implementation must give for these inputs: SHA-256, and RFC 4231's vector and text beyond ASCII. */
const SHA256_PROBE = 'agentmarket: SHA-256 probe ✓'
const HMAC_PROBES: [key: string, text: string, encoding: DigestEncoding, expected: string][] = [
  [
    'Jefe',
    'what do ya want for nothing?',
    'hex',
    '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
  ],
  [
    'agentmarket ✓',
    'AGM-ABCD-EFGH',
    'hex',
    '273079e8a27128755f5b7eb8fb37970d94cfff3de48b7569cc2e6cfd37e6335c',
  ],
  ['Jefe', 'what do ya want for nothing?', 'base64url', 'W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM'],
]

/**
 * Makes core hash with the host's synchronous native SHA-256 and HMAC-SHA256 for the whole process: a tenth of the
 * JavaScript SHA-256's cost, 2 µs against Web Crypto's 30 for an HMAC (bench/CHANGES.md). They are checked against
 * known digests first, so ones that hash differently are refused instead of locking every agent out or making every
 * pairing code and challenge unspendable.
 * @example useNativeHashes({ sha256: (t) => createHash('sha256').update(t).digest('hex'), hmacSha256: (k, t, e) => createHmac('sha256', k).update(t).digest(e) })
 */
export function useNativeHashes(native: Hashes): void {
  if (native.sha256(SHA256_PROBE) !== portableHashes.sha256(SHA256_PROBE))
    throw new TypeError('useNativeHashes: sha256 does not give SHA-256 of UTF-8 text as lower-case hex')
  if (
    HMAC_PROBES.some(([key, text, encoding, expected]) => native.hmacSha256(key, text, encoding) !== expected)
  )
    throw new TypeError(
      'useNativeHashes: hmacSha256 does not give HMAC-SHA256 of UTF-8 text as asked, synchronously',
    )
  installed = native
}

/** The hashes core uses: the host's native ones once installed, else the portable ones. */
export function hashes(): Hashes {
  return installed
}
