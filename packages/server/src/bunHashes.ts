import type { Hashes } from '@agentmarket/core'

/** Core's hashes by Bun, native and synchronous: what createApp installs for the whole process. */
export const bunHashes: Hashes = {
  sha256: (text) => Bun.SHA256.hash(text, 'hex') as string,
  hmacSha256: (key, text, encoding) => new Bun.CryptoHasher('sha256', key).update(text).digest(encoding),
}
