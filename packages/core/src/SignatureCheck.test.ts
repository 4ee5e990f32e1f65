import { describe, expect, test } from 'bun:test'
import { keccak256, stringToHex, zeroAddress } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { signatureOf } from './SignatureCheck.ts'
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
