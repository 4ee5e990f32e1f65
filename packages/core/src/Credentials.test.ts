import { describe, expect, test } from 'bun:test'
import { createHash, createHmac } from 'node:crypto'
import {
  constantTimeEqual,
  generateApiKey,
  generatePairingCode,
  hashSecret,
  hmacSha256Hex,
  PAIRING_ALPHABET,
  useNativeHmacSha256,
  useNativeSha256,
} from './Credentials.ts'
import { cryptoRandom, type Random } from './ports/Random.ts'

describe('generateApiKey', () => {
  test('behavior: amk_ and 32 random bytes in hex, different every time', () => {
    const random = cryptoRandom()
    const key = generateApiKey(random)
    expect(key).toMatch(/^amk_[0-9a-f]{64}$/)
    expect(generateApiKey(random)).not.toBe(key)
  })
})

describe('generatePairingCode', () => {
  test('behavior: PREFIX-XXXX-XXXX from an alphabet without look-alikes', () => {
    for (let i = 0; i < 200; i++)
      expect(generatePairingCode(cryptoRandom(), 'AGM')).toMatch(
        /^AGM-[A-HJKMNP-Z2-9]{4}-[A-HJKMNP-Z2-9]{4}$/,
      )
    for (const lookAlike of '01OIL') expect(PAIRING_ALPHABET).not.toContain(lookAlike)
  })

  test('behavior: bytes past the last whole alphabet cycle are rejected, not folded (no modulo bias)', () => {
    const bytes = [255, 250, 248, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    const scripted: Random = { bytes: (n) => Uint8Array.from(bytes.splice(0, n)) }
    expect(generatePairingCode(scripted, 'AGM')).toBe(
      `AGM-${PAIRING_ALPHABET.slice(0, 4)}-${PAIRING_ALPHABET.slice(4, 8)}`,
    )
  })
})

describe('hashSecret', () => {
  test('behavior: SHA-256 hex', () => {
    expect(hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
  })

  test('behavior: a host native SHA-256 hashes the same; one that hashes otherwise is refused and changes nothing', () => {
    const before = hashSecret('amk_ünïcode key')
    const upperCase = (text: string) => createHash('sha256').update(text).digest('hex').toUpperCase()
    const wrongs = [upperCase, (text: string) => createHash('sha1').update(text).digest('hex'), () => before]
    for (const wrong of wrongs) expect(() => useNativeSha256(wrong)).toThrow(/does not give SHA-256/)
    expect(hashSecret('amk_ünïcode key')).toBe(before)
    let calls = 0
    useNativeSha256((text) => {
      calls++
      return createHash('sha256').update(text).digest('hex')
    })
    expect(hashSecret('amk_ünïcode key')).toBe(before)
    expect(hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
    expect(calls).toBe(3)
  })
})

describe('hmacSha256Hex', () => {
  // RFC 4231, test case 2.
  const rfc = [
    'Jefe',
    'what do ya want for nothing?',
    '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
  ]

  test('behavior: HMAC-SHA256 hex by Web Crypto; a host native one gives the same, one that differs is refused', async () => {
    const [key = '', text = '', expected = ''] = rfc
    expect(await hmacSha256Hex(key, text)).toBe(expected)
    const byNode = (k: string, t: string) => createHmac('sha256', k).update(t).digest('hex')
    const before = await hmacSha256Hex('sécret ✓', 'AGM-ABCD-EFGH')
    expect(before).toBe(byNode('sécret ✓', 'AGM-ABCD-EFGH'))
    const wrongs = [
      (k: string, t: string) =>
        createHash('sha256')
          .update(k + t)
          .digest('hex'),
      (k: string, t: string) => byNode(k, t).toUpperCase(),
      (k: string, t: string) => byNode(t, k),
    ]
    for (const wrong of wrongs) expect(() => useNativeHmacSha256(wrong)).toThrow(/does not give HMAC-SHA256/)
    let calls = 0
    useNativeHmacSha256((k, t) => {
      calls++
      return byNode(k, t)
    })
    calls = 0
    const native = hmacSha256Hex('sécret ✓', 'AGM-ABCD-EFGH')
    // Synchronous once native: no promise, no turn of the event loop.
    expect(native).toBe(before)
    expect(hmacSha256Hex(key, text)).toBe(expected)
    expect(calls).toBe(2)
  })
})

describe('constantTimeEqual', () => {
  test('behavior: equal only for identical strings', () => {
    expect(constantTimeEqual('abc', 'abc')).toBe(true)
    expect(constantTimeEqual('abc', 'abd')).toBe(false)
    expect(constantTimeEqual('abc', 'abcd')).toBe(false)
  })
})
