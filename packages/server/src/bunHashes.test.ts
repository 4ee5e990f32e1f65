import { describe, expect, test } from 'bun:test'
import { hmacSha256Hex, useNativeHmacSha256, webCryptoHashes } from '@agentmarket/core'
import { bunHashes, bunHmacSha256 } from './bunHashes.ts'

describe('bunHashes', () => {
  test('behavior: the same HMAC ids and SHA-256 digests as Web Crypto, for ASCII and other text', async () => {
    const reference = webCryptoHashes()
    const key = 'mpp-secret-key-of-at-least-32-bytes, é and 🙂'
    for (const text of [
      '',
      'localhost|tempo|charge|eyJh|2026-01-01T00:00:00.000Z||eyJi',
      'Zürich → 東京 🙂',
    ]) {
      expect(bunHashes.hmac(key, text)).toBe(await reference.hmac(key, text))
      expect(bunHashes.sha256(text)).toBe(await reference.sha256(text))
    }
    expect(bunHashes.hmac(key, 'x')).toMatch(/^[A-Za-z0-9_-]{43}$/)
  })

  test("behavior: the pairing HMAC is Web Crypto's in hex, and core takes it as its native HMAC", async () => {
    const key = 'pairing secret, é and 🙂'
    for (const code of ['AGM-ABCD-EFGH', 'Zürich 🙂'])
      expect(bunHmacSha256(key, code)).toBe(await hmacSha256Hex(key, code))
    expect(() => useNativeHmacSha256(bunHmacSha256)).not.toThrow()
  })
})
