import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { signedRequestHeaders } from '../../packages/server/src/testing/http.ts'
import { type CallAnswer, expectProblem, jsonCaller } from '../support/examples.ts'
import { type MarketServer, startMarketServer } from '../support/process.ts'
import { reencodings } from '../support/signatures.ts'

// Attack: take over or keep an agent's key through POST /api/agents/{name}/keys/rotate: with another agent's key, a
// key already rotated away (on the process that last saw it), a replayed or misdirected wallet proof, a wallet that
// does not own the agent, or racing rotations. Driven through two bun start processes on one database.

const MARKET = 'https://market.test'
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-rotation-'))
const owner = privateKeyToAccount(generatePrivateKey())
const stranger = privateKeyToAccount(generatePrivateKey())
let servers: MarketServer[] = []
let calls: ReturnType<typeof jsonCaller>[] = []

/** The caller of process `index` (0 or 1). */
const on = (index: number) => {
  const call = calls[index]
  if (!call) throw new Error(`no server ${index}`)
  return call
}
const rotatePath = (name: string) => `/api/agents/${name}/keys/rotate`
const heartbeat = (server: number, name: string, key: string) =>
  on(server)('POST', `/api/agents/${name}/heartbeat`, { key })

/** Registers `name` on process 0; answers its key and pairing code. */
async function register(name: string): Promise<{ key: string; pairingCode: string }> {
  const { status, json } = await on(0)('POST', '/api/agents/register', { body: { name } })
  if (status !== 200) throw new Error(`register ${name}: ${status} ${JSON.stringify(json)}`)
  return { key: json.apiKey, pairingCode: json.pairingCode }
}

/** A wallet proof by `wallet` of POST `path` with `body`, signed now (`offsetMs` later: two proofs never coincide). */
const proofOf = (wallet: typeof owner, path: string, body = '', offsetMs = 0) =>
  signedRequestHeaders(
    wallet,
    { market: MARKET, method: 'POST', path, body },
    new Date(Date.now() + offsetMs),
  )

/** Rotates `name`'s key on process `server` with these headers (and body, raw). */
const rotate = (server: number, name: string, headers: Record<string, string>, raw?: string) =>
  on(server)('POST', rotatePath(name), { headers, ...(raw === undefined ? {} : { raw }) })

/** The answer is 401 or 403 (a proof that fits nothing may be read either way) and says why. */
function expectRefused(answer: CallAnswer) {
  expect([401, 403]).toContain(answer.status)
  expect(answer.headers.get('content-type')).toBe('application/problem+json')
}

beforeAll(async () => {
  const env = { DATABASE_URL: `file:${join(folder, 'market.db')}`, BASE_URL: MARKET }
  servers = [await startMarketServer(env), await startMarketServer(env)]
  calls = servers.map((server) => jsonCaller(server.base))
})

afterAll(() => {
  for (const server of servers) server.stop()
  rmSync(folder, { recursive: true, force: true })
})

describe('API key rotation', () => {
  test('behavior: the current key rotates it; the old key is 401 at once on both processes (heartbeat and rotate)', async () => {
    const { key: oldKey } = await register('rotor')
    // Process 1 authenticates the old key first, so it holds it in memory.
    expect((await heartbeat(1, 'rotor', oldKey)).status).toBe(200)
    const rotated = await on(0)('POST', rotatePath('rotor'), { key: oldKey })
    expect(rotated.status).toBe(200)
    // (Bun's toMatchObject writes asymmetric matchers into the object it checks: the key is checked apart.)
    expect(rotated.json.agent).toBe('rotor')
    expect(rotated.json.apiKey).toMatch(/^amk_[0-9a-f]{64}$/)
    for (const server of [0, 1]) {
      expectProblem(await heartbeat(server, 'rotor', oldKey), 401, 'unauthorized')
      expectProblem(await on(server)('POST', rotatePath('rotor'), { key: oldKey }), 401, 'unauthorized')
      expect((await heartbeat(server, 'rotor', rotated.json.apiKey)).status).toBe(200)
    }
    // The v1 path is the same operation.
    const again = await on(1)('POST', `/api/v1/agents/rotor/keys/rotate`, { key: rotated.json.apiKey })
    expect(again.status).toBe(200)
    expectProblem(await heartbeat(0, 'rotor', rotated.json.apiKey), 401, 'unauthorized')
  })

  test("attack: the rotated-away key replaying its rotation's Idempotency-Key gets no new key, on either process; a key that still works keeps its replay", async () => {
    const { key: oldKey } = await register('replayed')
    const rotateKeyed = (server: number) =>
      on(server)('POST', rotatePath('replayed'), { key: oldKey, headers: { 'idempotency-key': 'rot-1' } })
    const rotated = await rotateKeyed(0)
    expect(rotated.status).toBe(200)
    const newKey: string = rotated.json.apiKey
    for (const server of [0, 1]) {
      const replay = await rotateKeyed(server)
      expect(JSON.stringify(replay.json)).not.toContain(newKey)
      // (Read before expectProblem, whose matchers take the place of the fields they match.)
      expect(replay.json.detail).toContain("rotate the API key with the owner's wallet proof")
      expectProblem(replay, 401, 'idempotency_credential_revoked')
    }
    // A webhook added with the new key: a replay with that key, which still works, gets its secret again...
    const addHook = (server: number, key: string) =>
      on(server)('POST', '/api/agents/replayed/webhooks', {
        key,
        body: { url: 'https://93.184.216.34/hook' },
        headers: { 'idempotency-key': 'hook-1' },
      })
    const hook = await addHook(0, newKey)
    expect(hook.status).toBe(201)
    const replayed = await addHook(1, newKey)
    expect(replayed.headers.get('idempotent-replayed')).toBe('true')
    expect(replayed.json.secret).toBe(hook.json.secret)
    // ...and none once that key is rotated away; the endpoint exists once.
    const newer = await on(1)('POST', rotatePath('replayed'), { key: newKey })
    expect(newer.status).toBe(200)
    const late = await addHook(0, newKey)
    expect(JSON.stringify(late.json)).not.toContain(hook.json.secret)
    expectProblem(late, 401, 'idempotency_credential_revoked')
    const listed = await on(0)('GET', '/api/agents/replayed/webhooks', { key: newer.json.apiKey })
    expect(listed.json.webhooks).toHaveLength(1)
  })

  test("attack: another agent's key, or none, rotates nothing", async () => {
    const victim = await register('victim')
    const attacker = await register('attacker')
    const denied = await on(0)('POST', rotatePath('victim'), { key: attacker.key })
    expectProblem(denied, 403, 'forbidden')
    const bare = await rotate(1, 'victim', {})
    expectProblem(bare, 401, 'unauthorized')
    expect(bare.headers.get('www-authenticate')).toContain('Bearer')
    expect(bare.headers.get('www-authenticate')).toContain('WalletSignature')
    expect((await heartbeat(1, 'victim', victim.key)).status).toBe(200)
    expect((await heartbeat(0, 'attacker', attacker.key)).status).toBe(200)
  })

  test('race: concurrent rotations with one key on both processes: one answers a key, and only that key works', async () => {
    const { key } = await register('racer')
    expect((await heartbeat(1, 'racer', key)).status).toBe(200)
    const answers = await Promise.all(
      [0, 1, 0, 1, 0, 1].map((server) => on(server)('POST', rotatePath('racer'), { key })),
    )
    const won = answers.filter((answer) => answer.status === 200)
    expect(won).toHaveLength(1)
    for (const lost of answers.filter((answer) => answer.status !== 200))
      expect([401, 409]).toContain(lost.status)
    const winner = won[0]?.json.apiKey
    for (const server of [0, 1]) {
      expect((await heartbeat(server, 'racer', winner)).status).toBe(200)
      expect((await heartbeat(server, 'racer', key)).status).toBe(401)
    }
  })

  describe("with the owner's wallet proof (the key is lost)", () => {
    beforeAll(async () => {
      const { pairingCode } = await register('owned')
      const path = '/api/community/users/ann/pair-agent'
      const body = JSON.stringify({ pairingCode })
      const headers = { ...(await proofOf(owner, path, body)), 'x-wallet-address': owner.address }
      const paired = await on(0)('POST', path, { raw: body, headers })
      if (paired.status !== 200) throw new Error(`pairing failed: ${JSON.stringify(paired.json)}`)
    })

    test('behavior: the proof rotates the key once; its replay on either process is 401 proof_replayed', async () => {
      const headers = await proofOf(owner, rotatePath('owned'))
      const rotated = await rotate(0, 'owned', headers)
      expect(rotated.status).toBe(200)
      for (const server of [0, 1])
        expectProblem(await rotate(server, 'owned', headers), 401, 'proof_replayed')
      expect((await heartbeat(1, 'owned', rotated.json.apiKey)).status).toBe(200)
    })

    test("attack: the owner's rotation proof replayed re-encoded (v 0/1, high s) answers no key, so the payout wallet stays", async () => {
      const headers = await proofOf(owner, rotatePath('owned'))
      const rotated = await rotate(0, 'owned', headers)
      expect(rotated.status).toBe(200)
      const payout = { walletAddress: owner.address }
      expect(
        (await on(0)('PUT', '/api/agents/owned', { key: rotated.json.apiKey, body: payout })).status,
      ).toBe(200)
      const { v01, highS, highSv01 } = reencodings(headers['x-wallet-signature'])
      const replays = await Promise.all(
        [v01, highS, highSv01].map((signature, index) =>
          rotate(index % 2, 'owned', { ...headers, 'x-wallet-signature': signature }),
        ),
      )
      // What a replayer would do with a key it was handed: point the agent's payouts at its own wallet.
      for (const answer of replays.filter((replay) => replay.status === 200))
        await on(1)('PUT', '/api/agents/owned', {
          key: answer.json.apiKey,
          body: { walletAddress: stranger.address },
        })
      expect(replays.map((answer) => [answer.status, answer.json.code])).toEqual([
        [401, 'proof_replayed'],
        [401, 'invalid_signature'],
        [401, 'invalid_signature'],
      ])
      expect((await on(1)('GET', '/api/community/agents/owned')).json.walletAddress).toBe(owner.address)
      for (const server of [0, 1])
        expect((await heartbeat(server, 'owned', rotated.json.apiKey)).status).toBe(200)
    })

    test('attack: a proof by a wallet that does not own the agent, or for another path or body, changes nothing', async () => {
      const current = (await rotate(0, 'owned', await proofOf(owner, rotatePath('owned')))).json.apiKey
      expectProblem(await rotate(1, 'owned', await proofOf(stranger, rotatePath('owned'))), 403, 'forbidden')
      expectRefused(await rotate(0, 'owned', await proofOf(owner, '/api/agents/owned/pairing-code')))
      expectRefused(await rotate(1, 'owned', await proofOf(owner, rotatePath('victim'))))
      expectRefused(await rotate(0, 'owned', await proofOf(owner, rotatePath('owned'), '{"x":1}')))
      const elsewhere = await signedRequestHeaders(
        owner,
        { market: 'https://another-market.test', method: 'POST', path: rotatePath('owned') },
        new Date(),
      )
      expectRefused(await rotate(1, 'owned', elsewhere))
      for (const server of [0, 1]) expect((await heartbeat(server, 'owned', current)).status).toBe(200)
    })

    test("attack: the owner's proof rotates no agent it does not own, and an unowned agent only with its key", async () => {
      const unowned = await register('unowned')
      const proof = await proofOf(owner, rotatePath('unowned'))
      expectProblem(await rotate(0, 'unowned', proof), 403, 'forbidden')
      expectProblem(await rotate(1, 'victim', await proofOf(owner, rotatePath('victim'))), 403, 'forbidden')
      expect((await heartbeat(1, 'unowned', unowned.key)).status).toBe(200)
    })

    test('race: two owner proofs at once on both processes: one answers a key, the other 409 api_key_changed', async () => {
      const answers = await Promise.all(
        [0, 1].map(async (server) =>
          rotate(server, 'owned', await proofOf(owner, rotatePath('owned'), '', server)),
        ),
      )
      const statuses = answers.map((answer) => answer.status).sort()
      expect(statuses[0]).toBe(200)
      // Both read the same key before either wrote: the second is refused. Read after the first: it rotates too.
      if (statuses[1] !== 200)
        expectProblem(answers.find((a) => a.status !== 200) as CallAnswer, 409, 'api_key_changed')
      const keys = answers.filter((answer) => answer.status === 200).map((answer) => answer.json.apiKey)
      const working = await Promise.all(keys.map(async (key) => (await heartbeat(0, 'owned', key)).status))
      expect(working.filter((status) => status === 200)).toHaveLength(1)
    })
  })
})
