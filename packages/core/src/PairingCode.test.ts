import { describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { memoryStore } from './adapters/memoryStore.ts'
import { pairingDigests } from './PairingCode.ts'
import { portableHashes, useNativeHashes } from './ports/Hashes.ts'
import { cryptoRandom } from './ports/Random.ts'

describe('pairingDigests', () => {
  test('behavior: h1: + HMAC-SHA256 under the secret, the same by Web Crypto and by a host native HMAC', async () => {
    const secret = 'pairing sécret'
    const expected = `h1:${createHmac('sha256', secret).update('AGM-ABCD-EFGH').digest('hex')}`
    const digests = pairingDigests(memoryStore(), cryptoRandom(), secret)
    expect(await digests.of('AGM-ABCD-EFGH')).toBe(expected)
    let calls = 0
    useNativeHashes({
      sha256: portableHashes.sha256,
      hmacSha256: (key, text, encoding) => {
        calls++
        return createHmac('sha256', key).update(text).digest(encoding)
      },
    })
    calls = 0
    // Codes issued before the host's HMAC was taken still match: the digest is the same.
    expect(await digests.of('AGM-ABCD-EFGH')).toBe(expected)
    expect(await digests.existingOf('AGM-ABCD-EFGH')).toBe(expected)
    expect(calls).toBe(2)
  })

  test('behavior: without a secret, one made once and kept in the store keys every process alike', async () => {
    const store = memoryStore()
    const first = await pairingDigests(store, cryptoRandom()).of('AGM-WXYZ-2345')
    expect(first).toMatch(/^h1:[0-9a-f]{64}$/)
    expect(await pairingDigests(store, cryptoRandom()).existingOf('AGM-WXYZ-2345')).toBe(first)
    expect(await pairingDigests(memoryStore(), cryptoRandom()).existingOf('AGM-WXYZ-2345')).toBeNull()
  })
})
