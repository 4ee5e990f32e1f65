import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { hashSecret } from '@agentmarket/core'
import { createClient } from '@libsql/client'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { signedRequestHeaders } from '../../packages/server/src/testing/http.ts'
import { expectProblem, jsonCaller } from '../support/examples.ts'
import { startMarketServer } from '../support/process.ts'

// Attack: with a copy of the database (a leaked backup), give back every unspent pairing code by brute force (about
// 40 bits under unsalted SHA-256 before), or use a code issued long ago. Driven through bun start.

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-pairing-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

const SECRET = 'a pairing secret kept outside the database, 32+ bytes'
const MARKET = 'https://market.test'

describe('pairing codes are kept under a secret and expire', () => {
  test('attack: the stored digest is an HMAC under PAIRING_SECRET, not a hash anyone can recompute; a code expires; the agent issues a new one', async () => {
    const database = join(folder, 'market.db')
    const server = await startMarketServer({
      DATABASE_URL: `file:${database}`,
      PAIRING_SECRET: SECRET,
      BASE_URL: MARKET,
      PAIRING_CODE_TTL_SECONDS: '2',
    })
    try {
      const call = jsonCaller(server.base)
      const registered = await call('POST', '/api/agents/register', { body: { name: 'pet' } })
      const { apiKey, pairingCode, pairingCodeExpiresAt } = registered.json
      expect(Date.parse(pairingCodeExpiresAt)).toBeGreaterThan(Date.now())

      // What a thief of the database holds: no row matches the code's plain hash, nor anything without the secret.
      const db = createClient({ url: `file:${database}` })
      const rows = await db.execute('select pairing_code_hash from agents where name_key = ?', ['pet'])
      const stored = String(rows.rows[0]?.pairing_code_hash)
      db.close()
      expect(stored).toMatch(/^h1:[0-9a-f]{64}$/)
      expect(stored).not.toBe(hashSecret(pairingCode))
      const settings = await createClient({ url: `file:${database}` }).execute(
        "select count(*) as n from kv where key = 'setting:pairing_secret'",
      )
      expect(Number(settings.rows[0]?.n)).toBe(0)

      const owner = privateKeyToAccount(generatePrivateKey())
      // Each pairing is signed afresh (EIP-712, this request's body): a wallet proof is accepted once.
      const pair = async (code: string) => {
        const path = '/api/community/users/ann/pair-agent'
        const body = JSON.stringify({ pairingCode: code })
        const proof = await signedRequestHeaders(
          owner,
          { market: MARKET, method: 'POST', path, body },
          new Date(),
        )
        return call('POST', path, { raw: body, headers: { 'x-wallet-address': owner.address, ...proof } })
      }
      await Bun.sleep(2_300)
      const late = await pair(pairingCode)
      // Read before expectProblem: Bun's toMatchObject leaves its matchers in the object it checked.
      expect(String(late.json.detail)).toContain('/api/agents/pet/pairing-code')
      expectProblem(late, 409, 'pairing_code_expired')

      expectProblem(await call('POST', '/api/agents/pet/pairing-code'), 401, 'unauthorized')
      const renewed = await call('POST', '/api/agents/pet/pairing-code', { key: apiKey })
      expect(renewed.status).toBe(200)
      expect(renewed.json.pairingCode).not.toBe(pairingCode)
      expectProblem(await pair(pairingCode), 404, 'pairing_code_not_found')
      const paired = await pair(renewed.json.pairingCode)
      expect(paired.status).toBe(200)
      expect(paired.json.user.username).toBe('ann')
      expectProblem(
        await call('POST', '/api/agents/pet/pairing-code', { key: apiKey }),
        409,
        'agent_already_paired',
      )
    } finally {
      server.stop()
    }
  })
})
