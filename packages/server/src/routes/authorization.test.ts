import { describe, expect, test } from 'bun:test'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { expectProblemShape, testApp } from '../testing/http.ts'

type App = Awaited<ReturnType<typeof testApp>>
type Account = ReturnType<typeof privateKeyToAccount>

const owner = privateKeyToAccount(generatePrivateKey())
const stranger = privateKeyToAccount(generatePrivateKey())
const WALLET = '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed'

/** A market with two agents, a paid task of the first awaiting delivery, and the first owned by `owner`. */
async function market() {
  const app = await testApp()
  const seller = await app.register('seller', { skills: ['ping'] })
  const other = await app.register('other')
  const task = await app.call('POST', '/api/agents/seller/tasks', { body: { skill: 'ping' } })
  await app.pair('owner', seller.pairingCode, owner)
  return { app, seller, other, taskId: task.json.task_id as string }
}

/** What every write below may change, read back: it must be unchanged after a refusal. */
async function snapshot(app: App, taskId: string) {
  const reads = await Promise.all([
    app.call('GET', '/api/community/agents/seller'),
    app.call('GET', '/api/agents/seller/milestones'),
    app.call('GET', `/api/agents/seller/tasks/${taskId}`),
    app.call('GET', '/api/community/users/owner'),
  ])
  return JSON.stringify(reads.map((read) => read.json))
}

/** The bearer-key writes of SPEC rows 6, 7, 13 and the seller's delivery, each a valid request of its kind. */
const BEARER_WRITES = (taskId: string) => [
  { method: 'PUT', path: '/api/agents/seller', body: { bio: 'changed', walletAddress: WALLET } },
  { method: 'POST', path: '/api/agents/seller/heartbeat' },
  { method: 'POST', path: '/api/agents/seller/milestones', body: { date: '2026-05-01', title: 'Shipped' } },
  {
    method: 'POST',
    path: `/api/agents/seller/tasks/${taskId}/complete`,
    body: { result_url: 'https://r.example/1' },
  },
]

/** Wallet-signature headers for `method path` by `account`, `skewSeconds` away from the app's clock. */
const walletProof = (app: App, account: Account, method: string, path: string, skewSeconds = 0) =>
  app.walletProof(account, method, path, skewSeconds)

describe('authorization matrix', () => {
  test("error: every bearer write refuses no key, an unknown key and another agent's key, and changes nothing; the right key works", async () => {
    const { app, seller, other, taskId } = await market()
    // Unknown keys: well formed but never issued, and one that is not even a key.
    const refusals: { key?: string; status: number; code: string }[] = [
      { status: 401, code: 'unauthorized' },
      { key: `amk_${'0'.repeat(64)}`, status: 401, code: 'unauthorized' },
      { key: 'not-a-key', status: 401, code: 'unauthorized' },
      { key: other.key, status: 403, code: 'forbidden' },
    ]
    let cases = 0
    for (const write of BEARER_WRITES(taskId)) {
      for (const refusal of refusals) {
        const before = await snapshot(app, taskId)
        const answer = await app.call(write.method, write.path, { body: write.body, key: refusal.key })
        expectProblemShape(answer, refusal.status, refusal.code)
        if (refusal.status === 401) expect(answer.headers.get('www-authenticate')).toStartWith('Bearer')
        expect(await snapshot(app, taskId), `${write.method} ${write.path} with ${refusal.key}`).toBe(before)
        cases++
      }
      const allowed = await app.call(write.method, write.path, { body: write.body, key: seller.key })
      expect(allowed.status, `${write.method} ${write.path}: ${allowed.text}`).toBeLessThan(300)
      cases++
    }
    expect(cases).toBe(20)
  })

  test("error: every wallet-proved endpoint refuses no signature, a stale one and another wallet's, and changes nothing; the owner's works", async () => {
    const { app, taskId } = await market()
    const endpoints = [
      { method: 'PUT', path: '/api/community/users/owner', body: { bio: 'mine' } },
      { method: 'GET', path: '/api/community/users/owner/invite' },
    ]
    let cases = 0
    for (const endpoint of endpoints) {
      const { method, path, body } = endpoint
      const refusals: [Record<string, string>, number][] = [
        [{}, 401],
        [await walletProof(app, owner, method, path, -301), 401],
        [await walletProof(app, stranger, method, path), 403],
        [await walletProof(app, owner, method === 'PUT' ? 'GET' : 'PUT', path), 403],
      ]
      for (const [headers, status] of refusals) {
        const before = await snapshot(app, taskId)
        const answer = await app.call(method, path, { body, headers })
        expect(answer.status, `${method} ${path} ${JSON.stringify(Object.keys(headers))}`).toBe(status)
        expect(answer.headers.get('content-type')).toBe('application/problem+json')
        expect(await snapshot(app, taskId)).toBe(before)
        cases++
      }
      const allowed = await app.call(method, path, {
        body,
        headers: await walletProof(app, owner, method, path),
      })
      expect(allowed.status).toBe(200)
      cases++
    }
    expect(cases).toBe(10)
  })

  test('error: pairing needs a wallet address proved by its signature, and a username held by another wallet refuses it', async () => {
    const { app } = await market()
    const fresh = await app.register('fresh')
    const path = '/api/community/users/owner/pair-agent'
    const pair = (headers: Record<string, string>) =>
      app.call('POST', path, { body: { pairingCode: fresh.pairingCode }, headers })
    expectProblemShape(await pair({}), 400, 'invalid_wallet_address')
    expectProblemShape(await pair({ 'x-wallet-address': owner.address }), 401, 'wallet_proof_required')
    expectProblemShape(await app.pair('owner', fresh.pairingCode, stranger), 403, 'forbidden')
    expect((await app.call('GET', '/api/community/agents/fresh')).json.owner).toBeNull()
    expect((await app.pair('owner', fresh.pairingCode, owner)).status).toBe(200)
  })
})
