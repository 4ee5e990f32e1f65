import type { MppHashes } from '@agentmarket/core'

/** SHA-256 of UTF-8 text as lower-case hex, by Bun: native and synchronous. */
export const bunSha256 = (text: string): string => Bun.SHA256.hash(text, 'hex') as string

/** HMAC-SHA256 of UTF-8 text under a UTF-8 key as lower-case hex, by Bun: native and synchronous (pairing codes). */
export const bunHmacSha256 = (key: string, text: string): string =>
  new Bun.CryptoHasher('sha256', key).update(text).digest('hex')

/** Machine payments' hashes by Bun, native and synchronous: a fraction of Web Crypto's cost on every 402 challenge. */
export const bunHashes: MppHashes = {
  hmac: (key, message) => new Bun.CryptoHasher('sha256', key).update(message).digest('base64url'),
  sha256: bunSha256,
}
