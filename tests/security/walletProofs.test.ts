import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MARKET_ROUTES } from '@agentmarket/core'
import type { RouteRow } from '@agentmarket/core/routes'
import { viemChain } from '@agentmarket/core/viem'
import { type Address, type Hex, serializeErc6492Signature } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { signedRequestHeaders, testApp, walletProofHeaders } from '../../packages/server/src/testing/http.ts'
import { startAnvil } from '../support/anvil.ts'
import { type CallAnswer, expectProblem, jsonCaller } from '../support/examples.ts'
import { type MarketServer, startMarketServer } from '../support/process.ts'
import { reencodings } from '../support/signatures.ts'

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

// Attack: capture a proof and send it again re-encoded (v as 0/1, the high-s twin, both, EIP-2098 compact), so that a
// ledger of signature bytes takes it for a new proof; and send the deprecated EIP-191 proof (no market, no body) to
// an operation CONTRACT.md does not name it for. The operations are every route row that takes a wallet proof.

/** The operations CONTRACT.md names the EIP-191 proof for: profile edits and reading one's invite code. */
const CONTRACT_EIP191 = new Set(['updateUser', 'getInvite'])

/** A request of one operation the owner may make now, not made before: its body and any headers it needs. */
type Attempt = { body: string; headers?: Record<string, string> }

/** How to make an operation's request afresh, and what it answers when the proof is accepted. */
type Scenario = { next(): Promise<Attempt>; accepted: { status: number; code?: string } }

let agents = 0
/** Registers a new agent on process 0; answers its pairing code. */
async function pairingCode(): Promise<string> {
  const { json } = await (calls[0] as ReturnType<typeof jsonCaller>)('POST', '/api/agents/register', {
    body: { name: `pup-${++agents}` },
  })
  return json.pairingCode
}

/** One per route row that takes a wallet proof (a row missing here fails the test below), for user ann and pet. */
const SCENARIOS: Record<string, Scenario> = {
  rotateApiKey: { next: async () => ({ body: '' }), accepted: { status: 200 } },
  getBudget: { next: async () => ({ body: '' }), accepted: { status: 404, code: 'budget_not_found' } },
  pairAgent: {
    next: async () => ({
      body: JSON.stringify({ pairingCode: await pairingCode() }),
      headers: { 'x-wallet-address': owner.address },
    }),
    accepted: { status: 200 },
  },
  updateUser: {
    next: async () => ({ body: JSON.stringify({ bio: `edit ${++agents}` }) }),
    accepted: { status: 200 },
  },
  getInvite: { next: async () => ({ body: '' }), accepted: { status: 200 } },
}

const takesWalletProof = (row: RouteRow) => /wallet/i.test(row.auth)
const PROOF_ROWS = MARKET_ROUTES.filter(takesWalletProof)
/** The path a client calls for `row`, for agent pet and user ann. */
const pathOf = (row: RouteRow) => `/api${row.path.replace('{name}', 'pet').replace('{username}', 'ann')}`

let signedAt = Date.now()
/** A timestamp no other proof of this file used: EIP-712 proofs are dated in milliseconds, EIP-191 in seconds. */
function nextTime(step: number): Date {
  signedAt = Math.max(signedAt + step, Date.now())
  return new Date(signedAt)
}

/** Sends `row`'s request `attempt` with the wallet proof `proof` to process `server`. */
const send = (server: number, row: RouteRow, attempt: Attempt, proof: Record<string, string>) =>
  (calls[server] as ReturnType<typeof jsonCaller>)(row.method, pathOf(row), {
    ...(attempt.body ? { raw: attempt.body } : {}),
    headers: { ...attempt.headers, ...proof },
  }) as Promise<CallAnswer>

/** The owner's EIP-712 proof of `row`'s request `attempt`. */
const eip712Proof = (row: RouteRow, attempt: Attempt) =>
  signedRequestHeaders(
    owner,
    { market: MARKET, method: row.method, path: pathOf(row), body: attempt.body },
    nextTime(1),
  )

/** The owner's EIP-191 proof of `row`'s request, a whole second after any other (its timestamp is in seconds). */
const eip191Proof = (row: RouteRow) =>
  walletProofHeaders(
    owner,
    row.method,
    pathOf(row),
    new Date(Math.floor(nextTime(1000).getTime() / 1000) * 1000),
  )

/** The answer is the one `scenario` gives an accepted proof. */
function expectAccepted(answer: CallAnswer, scenario: Scenario) {
  expect({ status: answer.status, code: answer.json?.code }).toEqual({
    status: scenario.accepted.status,
    code: scenario.accepted.code,
  })
}

/** Each re-encoding of `proof`'s signature, sent again with the same request, is refused on either process. */
async function expectReencodingsRefused(row: RouteRow, attempt: Attempt, proof: Record<string, string>) {
  const variants = reencodings(proof['x-wallet-signature'] as Hex)
  const answers = await Promise.all(
    Object.entries(variants).map(async ([name, signature], index) => {
      const answer = await send(index % 2, row, attempt, { ...proof, 'x-wallet-signature': signature })
      return [name, answer.status, answer.json?.code]
    }),
  )
  // The same signed digest is the same proof (v 0/1); a high-s or compact signature is no wallet's encoding.
  expect(answers).toEqual([
    ['v01', 401, 'proof_replayed'],
    ['highS', 401, 'invalid_signature'],
    ['highSv01', 401, 'invalid_signature'],
    ['compact', 401, 'invalid_signature'],
  ])
}

describe('a wallet proof is its signed digest: no re-encoding of its signature is a new proof', () => {
  test('the route rows that take a wallet proof each have a replay scenario', () => {
    expect(PROOF_ROWS.map((row) => row.id).sort()).toEqual(Object.keys(SCENARIOS).sort())
  })

  for (const row of PROOF_ROWS)
    test(`attack: ${row.id}: the owner's EIP-712 proof re-encoded (v 0/1, high s, both, compact) is refused`, async () => {
      const scenario = SCENARIOS[row.id] as Scenario
      const attempt = await scenario.next()
      const proof = await eip712Proof(row, attempt)
      expectAccepted(await send(0, row, attempt, proof), scenario)
      await expectReencodingsRefused(row, attempt, proof)
    })

  for (const row of PROOF_ROWS.filter((row) => CONTRACT_EIP191.has(row.id)))
    test(`attack: ${row.id} (CONTRACT names EIP-191 for it): the EIP-191 proof is accepted once, re-encoded never`, async () => {
      const scenario = SCENARIOS[row.id] as Scenario
      const attempt = await scenario.next()
      const proof = await eip191Proof(row)
      expectAccepted(await send(1, row, attempt, proof), scenario)
      await expectReencodingsRefused(row, attempt, proof)
    })

  for (const row of PROOF_ROWS.filter((row) => !CONTRACT_EIP191.has(row.id)))
    test(`attack: ${row.id} (CONTRACT does not name EIP-191 for it): the EIP-191 proof is 400 eip712_proof_required`, async () => {
      const scenario = SCENARIOS[row.id] as Scenario
      const attempt = await scenario.next()
      const refused = await send(0, row, attempt, await eip191Proof(row))
      // (Bun's toMatchObject writes asymmetric matchers into the object it checks: the detail is read first.)
      expect(refused.json.detail).toContain('X-Wallet-Scheme: eip712')
      expectProblem(refused, 400, 'eip712_proof_required')
      // The same request with the EIP-712 proof goes through: the refusal changed nothing.
      expectAccepted(await send(1, row, attempt, await eip712Proof(row, attempt)), scenario)
    })
})

/** A wallet contract that accepts every signature (ERC-1271 magic value for any call): many signatures, one digest. */
const ACCEPT_ALL_WALLET_CODE = '0x631626ba7e60e01b60005260206000f3' as Hex

describe('a contract wallet (ERC-1271) that accepts many signatures of one request still spends it once', () => {
  test('attack: the same request sent again with other signature bytes, or ERC-6492-wrapped, is 401 proof_replayed', async () => {
    const anvil = await startAnvil()
    try {
      const vault = '0x5ec0de0000000000000000000000000000000002' as Address
      await anvil.testClient.setCode({ address: vault, bytecode: ACCEPT_ALL_WALLET_CODE })
      const app = await testApp('2026-06-01T12:00:00.000Z', {
        chain: viemChain({ rpcUrl: anvil.rpcUrl, timeoutMs: 5_000 }),
      })
      /** Headers of a contract wallet's proof: its signature is whatever bytes it accepts, at the app's clock. */
      const proofOf = (signature: Hex) => ({
        'x-wallet-signature': signature,
        'x-wallet-timestamp': String(app.clock.now().getTime()),
        'x-wallet-scheme': 'eip712',
      })
      const { pairingCode } = await app.register('vaulted')
      const pairing = '/api/community/users/vault/pair-agent'
      const paired = await app.call('POST', pairing, {
        body: { pairingCode },
        headers: { 'x-wallet-address': vault, ...proofOf(`0x${'ab'.repeat(70)}`) },
      })
      expect(paired.status).toBe(200)
      app.clock.advance(1_000)
      const path = '/api/community/users/vault'
      const edit = (signature: Hex) =>
        app.call('PUT', path, { body: { bio: 'once' }, headers: proofOf(signature) })
      const first = `0x${'cd'.repeat(70)}` as Hex
      expect((await edit(first)).status).toBe(200)
      const wrapped = serializeErc6492Signature({ address: vault, data: '0x', signature: first })
      const replays = [`0x${'ef'.repeat(70)}` as Hex, `${first}00` as Hex, wrapped]
      const answers = []
      for (const signature of replays) answers.push((await edit(signature)).json?.code)
      expect(answers).toEqual(['proof_replayed', 'proof_replayed', 'proof_replayed'])
    } finally {
      anvil.stop()
    }
  })
})
