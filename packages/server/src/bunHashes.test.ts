import { describe, expect, test } from 'bun:test'
import { portableHashes, useNativeHashes } from '@agentmarket/core'
import { bunHashes } from './bunHashes.ts'

describe('bunHashes', () => {
  test('behavior: the same SHA-256 digests and HMACs (hex and base64url) as the portable ones, ASCII or not; core takes them', async () => {
    const key = 'mpp-secret-key-of-at-least-32-bytes, é and 🙂'
    for (const text of [
      '',
      'localhost|tempo|charge|eyJh|2026-01-01T00:00:00.000Z||eyJi',
      'AGM-ABCD-EFGH',
      'Zürich → 東京 🙂',
    ]) {
      expect(bunHashes.sha256(text)).toBe(portableHashes.sha256(text))
      for (const encoding of ['hex', 'base64url'] as const)
        expect(bunHashes.hmacSha256(key, text, encoding)).toBe(
          await portableHashes.hmacSha256(key, text, encoding),
        )
    }
    expect(bunHashes.hmacSha256(key, 'x', 'base64url')).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(() => useNativeHashes(bunHashes)).not.toThrow()
  })
})
