import { describe, expect, test } from 'bun:test'
import { createHash, createHmac } from 'node:crypto'
import { base64Url, type Hashes, hashes, hexOf, portableHashes, useNativeHashes } from './Hashes.ts'

const byNode: Hashes = {
  sha256: (text) => createHash('sha256').update(text).digest('hex'),
  hmacSha256: (key, text, encoding) => createHmac('sha256', key).update(text).digest(encoding),
}

describe('portableHashes', () => {
  test('behavior: SHA-256 hex; HMAC-SHA256 by Web Crypto in hex (RFC 4231, case 2) and base64url', async () => {
    expect(portableHashes.sha256('abc')).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    )
    const [key, text] = ['Jefe', 'what do ya want for nothing?']
    expect(await portableHashes.hmacSha256(key, text, 'hex')).toBe(
      '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    )
    expect(await portableHashes.hmacSha256(key, text, 'base64url')).toBe(
      'W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM',
    )
    for (const encoding of ['hex', 'base64url'] as const)
      expect(await portableHashes.hmacSha256('sécret ✓', 'AGM-ABCD-EFGH', encoding)).toBe(
        byNode.hmacSha256('sécret ✓', 'AGM-ABCD-EFGH', encoding) as string,
      )
  })
})

describe('base64Url', () => {
  test("behavior: the runtime's own base64url and the btoa one (runtimes without it) write every length alike, unpadded", () => {
    for (let length = 0; length <= 40; length += 1) {
      const bytes = Uint8Array.from({ length }, (_, index) => (index * 97 + length * 31) % 256)
      const withoutNative = Uint8Array.from(bytes)
      Object.defineProperty(withoutNative, 'toBase64', { value: undefined })
      const expected = Buffer.from(bytes).toString('base64url')
      expect(base64Url(bytes)).toBe(expected)
      expect(base64Url(withoutNative)).toBe(expected)
    }
  })
})

describe('hexOf', () => {
  test("behavior: the runtime's own hex and viem's (runtimes without it) write every byte alike, lower-case, no 0x", () => {
    const bytes = Uint8Array.from({ length: 256 }, (_, index) => index)
    const withoutNative = Uint8Array.from(bytes)
    Object.defineProperty(withoutNative, 'toHex', { value: undefined })
    const expected = Buffer.from(bytes).toString('hex')
    expect(hexOf(bytes)).toBe(expected)
    expect(hexOf(withoutNative)).toBe(expected)
    expect(hexOf(new Uint8Array())).toBe('')
  })
})

describe('useNativeHashes', () => {
  test('behavior: native hashes that differ (or answer late) are refused and change nothing; right ones are used, synchronously', async () => {
    const wrongs: Hashes[] = [
      { ...byNode, sha256: (text) => createHash('sha256').update(text).digest('hex').toUpperCase() },
      { ...byNode, sha256: (text) => createHash('sha1').update(text).digest('hex') },
      {
        ...byNode,
        hmacSha256: (key, text) =>
          createHash('sha256')
            .update(key + text)
            .digest('hex'),
      },
      { ...byNode, hmacSha256: (key, text, encoding) => byNode.hmacSha256(text, key, encoding) },
      { ...byNode, hmacSha256: (key, text) => byNode.hmacSha256(key, text, 'hex') },
      { ...byNode, hmacSha256: async (key, text, encoding) => byNode.hmacSha256(key, text, encoding) },
    ]
    const before = hashes()
    for (const wrong of wrongs) expect(() => useNativeHashes(wrong)).toThrow(/^useNativeHashes: /)
    expect(hashes()).toBe(before)
    let calls = 0
    useNativeHashes({
      sha256: (text) => {
        calls++
        return byNode.sha256(text)
      },
      hmacSha256: (key, text, encoding) => {
        calls++
        return byNode.hmacSha256(key, text, encoding)
      },
    })
    calls = 0
    expect(hashes().sha256('amk_ünïcode key')).toBe(portableHashes.sha256('amk_ünïcode key'))
    // Synchronous once native: no promise, no turn of the event loop.
    expect(hashes().hmacSha256('sécret ✓', 'AGM-ABCD-EFGH', 'base64url')).toBe(
      await portableHashes.hmacSha256('sécret ✓', 'AGM-ABCD-EFGH', 'base64url'),
    )
    expect(calls).toBe(2)
  })
})
