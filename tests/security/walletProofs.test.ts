import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { signedRequestHeaders, walletProofHeaders } from '../../packages/server/src/testing/http.ts'
import { type CallAnswer, jsonCaller } from '../support/examples.ts'
import { type MarketServer, startMarketServer } from '../support/process.ts'

// Attack: replay a captured wallet proof (with another body, on another process or marketplace, or ten minutes later),
// or sign one dated in the future to stretch its life. Driven through two bun start processes on one database.

const MARKET = 'https://market.test'
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-proofs-'))
const owner = privateKeyToAccount(generatePrivateKey())
let servers: MarketServer[] = []
let calls: ReturnType<typeof jsonCaller>[] = []

beforeAll(async () => {
  const env = { DATABASE_URL: `file:${join(folder, 'market.db')}`, BASE_URL: MARKET }
  servers = [await startMarketServer(env), await startMarketServer(env)]
  calls = servers.map((server) => jsonCaller(server.base))
  const [first] = calls
  if (!first) throw new Error('no server')
  const { json } = await first('POST', '/api/agents/register', { body: { name: 'pet' } })
  const path = '/api/community/users/ann/pair-agent'
  const body = JSON.stringify({ pairingCode: json.pairingCode })
  const headers = await signedRequestHeaders(
    owner,
    { market: MARKET, method: 'POST', path, body },
    new Date(),
  )
  const paired = await first('POST', path, {
    raw: body,
    headers: { ...headers, 'x-wallet-address': owner.address },
  })
  if (paired.status !== 200) throw new Error(`pairing failed: ${JSON.stringify(paired.json)}`)
})

afterAll(() => {
  for (const server of servers) server.stop()
  rmSync(folder, { recursive: true, force: true })
})

const PATH = '/api/community/users/ann'
const bioOf = async () => (await calls[0]?.('GET', PATH))?.json.bio
const put = (server: number, body: string, headers: Record<string, string>) =>
  calls[server]?.('PUT', PATH, { raw: body, headers }) as Promise<CallAnswer>
const signed = (body: string, at = new Date(), market = MARKET) =>
  signedRequestHeaders(owner, { market, method: 'PUT', path: PATH, body }, at)

describe('wallet proofs bind market, method, path, body and time, and are accepted once', () => {
  test('behavior: an EIP-712 proof of this request edits the profile once; its replay on either process is refused', async () => {
    const body = JSON.stringify({ bio: 'first' })
    const headers = await signed(body)
    expect((await put(0, body, headers)).status).toBe(200)
    for (const server of [0, 1]) {
      const replay = await put(server, body, headers)
      expect(replay.status).toBe(401)
      expect(replay.json.code).toBe('proof_replayed')
    }
    expect(await bioOf()).toBe('first')
  })

  test('attack: a proof sent with another body, made for another marketplace, or dated ahead changes nothing', async () => {
    const other = JSON.stringify({ bio: 'hacked' })
    const forBody = await put(0, other, await signed(JSON.stringify({ bio: 'what was signed' })))
    expect([401, 403]).toContain(forBody.status)
    const elsewhere = await put(1, other, await signed(other, new Date(), 'https://another-market.test'))
    expect([401, 403]).toContain(elsewhere.status)
    const ahead = await put(0, other, await signed(other, new Date(Date.now() + 60_000)))
    expect(ahead.status).toBe(401)
    expect(ahead.json.code).toBe('stale_timestamp')
    const old = await put(0, other, await signed(other, new Date(Date.now() - 301_000)))
    expect(old.json.code).toBe('stale_timestamp')
    expect(await bioOf()).toBe('first')
  })

  test('behavior: the deprecated EIP-191 proof still works, once, until WALLET_PROOF_LEGACY=refuse', async () => {
    const body = JSON.stringify({ bio: 'legacy' })
    const headers = await walletProofHeaders(owner, 'PUT', PATH, new Date())
    expect((await put(1, body, headers)).status).toBe(200)
    expect((await put(0, body, headers)).json.code).toBe('proof_replayed')
    const strict = await startMarketServer({
      DATABASE_URL: `file:${join(folder, 'market.db')}`,
      BASE_URL: MARKET,
      WALLET_PROOF_LEGACY: 'refuse',
    })
    try {
      const call = jsonCaller(strict.base)
      const fresh = await walletProofHeaders(owner, 'PUT', PATH, new Date(Date.now() + 1_000))
      const refused = await call('PUT', PATH, { raw: JSON.stringify({ bio: 'no' }), headers: fresh })
      expect(refused.status).toBe(401)
      expect(refused.json.code).toBe('legacy_refused')
      const current = JSON.stringify({ bio: 'eip712 only' })
      expect((await call('PUT', PATH, { raw: current, headers: await signed(current) })).status).toBe(200)
    } finally {
      strict.stop()
    }
  })
})
