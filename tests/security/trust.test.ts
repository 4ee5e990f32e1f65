import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SELF_MADE_CEILING } from '@agentmarket/core/rows'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { signedRequestHeaders, type TestWallet } from '../../packages/server/src/testing/http.ts'
import { type CallAnswer, type CallInit, expectProblem, jsonCaller } from '../support/examples.ts'
import { type MarketServer, startMarketServer } from '../support/process.ts'

// Attack (issue 16, item 7): one agent inflates its own trust score with its own requests alone: pairing itself to
// a user by an unproven X-Wallet-Address, "verified" milestones with any URL, and delivering free tasks it ordered
// itself. The score must stay at the documented self-made ceiling, whatever the number of such requests.

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-trust-'))
let server: MarketServer
let send: ReturnType<typeof jsonCaller>
let requests = 0

/** One request of the lone agent, counted. */
const call = (method: string, path: string, init: CallInit = {}): Promise<CallAnswer> => {
  requests++
  return send(method, path, init)
}

beforeAll(async () => {
  server = await startMarketServer({
    DATABASE_URL: `file:${join(folder, 'market.db')}`,
    CHAIN_RPC_URL: 'http://127.0.0.1:9',
  })
  send = jsonCaller(server.base)
})

afterAll(() => {
  server?.stop()
  rmSync(folder, { recursive: true, force: true })
})

/** A pairing as `wallet`, signed by `signer` (the same wallet unless a test says otherwise). */
async function pairAs(username: string, pairingCode: string, wallet: TestWallet, signer = wallet) {
  const path = `/api/community/users/${username}/pair-agent`
  const body = JSON.stringify({ pairingCode })
  const market = `http://localhost:${new URL(server.base).port}`
  const proof = await signedRequestHeaders(signer, { market, method: 'POST', path, body }, new Date())
  return call('POST', path, { raw: body, headers: { 'x-wallet-address': wallet.address, ...proof } })
}

describe('a lone agent cannot raise its own trust score', () => {
  test('attack: every self-made request there is, many times over, ends at the self-made ceiling (30)', async () => {
    const scores: number[] = []
    const score = async () => {
      const agent = (await call('GET', '/api/community/agents/lone')).json
      scores.push(agent.trustScore)
      return agent.trustScore as number
    }
    const registered = await call('POST', '/api/agents/register', {
      body: {
        name: 'lone',
        bio: 'Trust me: I am the most reliable agent there is.',
        model: 'm-1',
        skills: ['Ping', 'Echo', { name: 'Audit', type: 'purchasable', price: 5, sla: '1 hour' }],
      },
    })
    expect(registered.status).toBe(200)
    const { apiKey: key, pairingCode } = registered.json as { apiKey: string; pairingCode: string }
    await score()

    const sellerWallet = privateKeyToAccount(generatePrivateKey())
    const walletSet = await call('PUT', '/api/agents/lone', {
      key,
      body: { walletAddress: sellerWallet.address },
    })
    expect(walletSet.status).toBe(200)
    for (let beat = 0; beat < 5; beat++)
      expect((await call('POST', '/api/agents/lone/heartbeat', { key })).status).toBe(200)
    await score()

    for (let n = 1; n <= 20; n++) {
      const body = {
        date: '2026-05-01',
        title: `Audit ${n} passed`,
        proof: `https://lone.example/proof/${n}`,
      }
      const milestone = await call('POST', '/api/agents/lone/milestones', { key, body })
      expect(milestone.json.trust).toBe('verified')
    }
    await score()

    // Orders of its own free skills, as itself and under other buyer names, delivered by itself.
    for (let n = 0; n < 12; n++) {
      const order = { skill: n % 2 ? 'ping' : 'echo', buyer: `fan-${n}`, params: { n } }
      const task = await call('POST', '/api/agents/lone/tasks', { body: order })
      expect(task.status).toBe(201)
      const done = await call('POST', `/api/agents/lone/tasks/${task.json.task_id}/complete`, {
        key,
        body: { result_url: `https://lone.example/result/${n}` },
      })
      expect(done.status).toBe(200)
    }
    const delivered = await call('GET', '/api/agents/lone/tasks')
    expect(delivered.json.total).toBe(12)
    const beforePairing = await score()

    // An owner it does not hold: only the address of a wallet it names is refused and changes nothing.
    const celebrity = privateKeyToAccount(generatePrivateKey())
    const unproven = await call('POST', '/api/community/users/celebrity/pair-agent', {
      body: { pairingCode },
      headers: { 'x-wallet-address': celebrity.address },
    })
    // Read before expectProblem: Bun's toMatchObject leaves its asymmetric matchers in the object it checked.
    expect(unproven.json.detail).toContain('path: "/api/community/users/celebrity/pair-agent"')
    expectProblem(unproven, 401, 'wallet_proof_required')
    expectProblem(await pairAs('celebrity', pairingCode, celebrity, sellerWallet), 401, 'invalid_signature')
    expect((await call('GET', '/api/community/agents/lone')).json.owner).toBeNull()
    expectProblem(await call('GET', '/api/community/users/celebrity'), 404, 'user_not_found')
    expect(await score()).toBe(beforePairing)

    // Its own owner, with a fresh wallet it holds and signs with: the one proven owner it can have alone.
    const selfOwner = privateKeyToAccount(generatePrivateKey())
    const paired = await pairAs('lone-owner', pairingCode, selfOwner)
    expect(paired.status).toBe(200)
    expect(paired.json.agent.owner).toEqual({ username: 'lone-owner' })
    for (let beat = 0; beat < 3; beat++) await call('POST', '/api/agents/lone/heartbeat', { key })

    expect(await score()).toBe(SELF_MADE_CEILING)
    expect(SELF_MADE_CEILING).toBe(30)
    expect(Math.max(...scores)).toBeLessThanOrEqual(SELF_MADE_CEILING)
    // The old formula gave this same agent 100 after about twenty of these requests; this one made many more.
    expect(requests).toBeGreaterThan(60)
  })
})
