import { describe, expect, test } from 'bun:test'
import { concat, hexToBigInt, keccak256, numberToHex, parseSignature, stringToHex, zeroAddress } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { isHighS, signatureOf } from './SignatureCheck.ts'
import { checkWalletProof, walletProofTypedData } from './WalletProof.ts'

// An ERC-6492 validator as viem runs it says yes to any invalid signature for the zero address: this reader says yes
// to everything, so only the check itself stands between a junk signature and the zero address.
const credulous = { isValidSignature: async () => true }
const junk = `0x${'00'.repeat(64)}1b` as const
const hash = keccak256(stringToHex('a request'))

describe('signatureOf', () => {
  test('behavior: a key signs for itself; another key is wrong_wallet; junk is invalid without a chain', async () => {
    const key = privateKeyToAccount(generatePrivateKey())
    const other = privateKeyToAccount(generatePrivateKey())
    const signature = await key.sign({ hash })
    expect(await signatureOf(key.address, hash, signature)).toBe('ok')
    expect(await signatureOf(other.address, hash, signature)).toBe('wrong_wallet')
    expect(await signatureOf(key.address, hash, junk)).toBe('invalid_signature')
  })

  test('attack: the zero address never signs, whatever the chain answers (payer proofs and wallet proofs alike)', async () => {
    expect(await signatureOf(zeroAddress, hash, junk, credulous)).toBe('invalid_signature')
    const target = {
      market: 'https://m.example',
      method: 'PUT',
      path: '/api/community/users/x',
      body: new Uint8Array(),
    }
    const now = new Date()
    const proof = { signature: junk, timestamp: String(now.getTime()), scheme: 'eip712' }
    expect(walletProofTypedData(target, BigInt(now.getTime())).message.path).toBe(target.path)
    expect(await checkWalletProof(zeroAddress, proof, target, now, { chain: credulous })).toEqual({
      ok: false,
      reason: 'invalid_signature',
    })
  })
})

/** secp256k1's group order: (r, n - s) with the other recovery bit is the malleated twin of (r, s). */
const ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n

describe('one signed digest, one proof', () => {
  test("attack: a key's high-s twin is refused before any chain is asked; v as 0/1 is the same proof (the digest)", async () => {
    const key = privateKeyToAccount(generatePrivateKey())
    const target = {
      market: 'https://m.example',
      method: 'POST',
      path: '/api/agents/a/keys/rotate',
      body: new Uint8Array(),
    }
    const now = new Date()
    const typed = walletProofTypedData(target, BigInt(now.getTime()))
    const signature = await key.signTypedData(typed)
    const { r, s, yParity } = parseSignature(signature)
    const twin = concat([
      r,
      numberToHex(ORDER - hexToBigInt(s), { size: 32 }),
      numberToHex(28 - yParity, { size: 1 }),
    ])
    const v01 = concat([r, s, numberToHex(yParity, { size: 1 })])
    expect([isHighS(signature), isHighS(twin), isHighS(v01)]).toEqual([false, true, false])
    expect(await signatureOf(key.address, keccak256(stringToHex('x')), twin, credulous)).toBe(
      'invalid_signature',
    )
    const proof = (sent: `0x${string}`) => ({
      signature: sent,
      timestamp: String(now.getTime()),
      scheme: 'eip712',
    })
    const first = await checkWalletProof(key.address, proof(signature), target, now)
    const again = await checkWalletProof(key.address, proof(v01), target, now)
    expect(first.ok && again.ok && first.id === again.id).toBe(true)
    expect(await checkWalletProof(key.address, proof(twin), target, now)).toEqual({
      ok: false,
      reason: 'invalid_signature',
    })
  })
})
