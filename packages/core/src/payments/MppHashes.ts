import { bytesToHex } from 'viem'
import { withoutTrailing } from '../Trim.ts'

/** The hashes a machine payment takes on every request: Web Crypto's unless the host has faster native ones. */
export type MppHashes = {
  /** HMAC-SHA256 of `message` under `key` (both UTF-8), as base64url without padding: an mppx challenge id. */
  hmac(key: string, message: string): string | Promise<string>
  /** SHA-256 of `text` (UTF-8) as lower-case hex without 0x: the digest of an order's body. */
  sha256(text: string): string | Promise<string>
}

const utf8 = new TextEncoder()

/** base64url without padding of `bytes`. */
export function base64Url(bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return withoutTrailing(btoa(binary).replaceAll('+', '-').replaceAll('/', '_'), '=')
}

/**
 * The hashes by Web Crypto (every host has it), each HMAC key imported once. A host with synchronous native ones
 * (Bun's CryptoHasher, node:crypto) passes those instead: about a tenth of the cost per 402 challenge.
 */
export function webCryptoHashes(): MppHashes {
  const keys = new Map<string, Promise<CryptoKey>>()
  return {
    async hmac(key, message) {
      let imported = keys.get(key)
      if (!imported) {
        imported = crypto.subtle.importKey(
          'raw',
          utf8.encode(key),
          { name: 'HMAC', hash: 'SHA-256' },
          false,
          ['sign'],
        )
        keys.set(key, imported)
      }
      return base64Url(new Uint8Array(await crypto.subtle.sign('HMAC', await imported, utf8.encode(message))))
    },
    async sha256(text) {
      return bytesToHex(new Uint8Array(await crypto.subtle.digest('SHA-256', utf8.encode(text)))).slice(2)
    },
  }
}
