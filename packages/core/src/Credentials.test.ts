import { describe, expect, test } from 'bun:test'
import {
  constantTimeEqual,
  generateApiKey,
  generatePairingCode,
  hashSecret,
  PAIRING_ALPHABET,
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
})

describe('constantTimeEqual', () => {
  test('behavior: equal only for identical strings', () => {
    expect(constantTimeEqual('abc', 'abc')).toBe(true)
    expect(constantTimeEqual('abc', 'abd')).toBe(false)
    expect(constantTimeEqual('abc', 'abcd')).toBe(false)
  })
})
