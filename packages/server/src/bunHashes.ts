import type { MppHashes } from '@agentmarket/core'

/** Machine payments' hashes by Bun, native and synchronous: a fraction of Web Crypto's cost on every 402 challenge. */
export const bunHashes: MppHashes = {
  hmac: (key, message) => new Bun.CryptoHasher('sha256', key).update(message).digest('base64url'),
  sha256: (text) => Bun.SHA256.hash(text, 'hex'),
}
