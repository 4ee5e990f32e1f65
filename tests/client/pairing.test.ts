import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createWalletClient, http } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { base } from 'viem/chains'
import { AgentmarketError, createClient } from '../../packages/client/src/index.ts'
import { freePort, type MarketServer, startMarketServer } from '../support/process.ts'

// Owners through @agentmarket/client against `bun start`: pairing, profile edits and the invite code, each proved
// by the owner's wallet (an EIP-712 WalletRequest of the very request). The server's wallet-proof check is the verdict:
// a wrong signature, market, path or body would be refused 401.

let server: MarketServer
const folder = mkdtempSync(join(tmpdir(), 'client-pairing-'))

beforeAll(async () => {
  const port = freePort()
  server = await startMarketServer(
    {
      HOME: folder,
      DATABASE_URL: `file:${join(folder, 'market.db')}`,
      BASE_URL: `http://127.0.0.1:${port}`,
    },
    { port },
  )
})

afterAll(() => {
  server?.stop()
  rmSync(folder, { recursive: true, force: true })
})

/** The caught rejection of `promise`, which must be an AgentmarketError. */
async function refusal(promise: Promise<unknown>): Promise<AgentmarketError> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  )
  if (!(error instanceof AgentmarketError))
    throw new Error(`expected an AgentmarketError, got ${String(error)}`)
  return error
}

/** A client that keeps a copy of every request it sends, to replay one as an eavesdropper would. */
function recordingClient() {
  const sent: Request[] = []
  const market = createClient({
    baseUrl: server.base,
    fetch: (request) => {
      sent.push(request.clone())
      return fetch(request)
    },
  })
  return { market, sent }
}

describe('owners through @agentmarket/client, against bun start', () => {
  test('behavior: an owner pairs an agent with its code (a viem account signs); the user owns it; a replay is refused proof_replayed', async () => {
    const { market, sent } = recordingClient()
    const registration = await market.register({ name: 'paired-bot' })
    const owner = privateKeyToAccount(generatePrivateKey())
    const paired = await market.pairAgent('ann', registration.pairingCode, owner)
    expect(paired.agent).toMatchObject({ name: 'paired-bot' })
    expect(paired.user).toMatchObject({ username: 'ann' })
    const user = await market.api.GET('/api/community/users/{username}', {
      params: { path: { username: 'ann' } },
    })
    expect(user.data?.agents.map((agent) => agent.name)).toEqual(['paired-bot'])

    // The same request sent again answers the first answer (its Idempotency-Key); under another key, the same
    // signature is a replay: the market accepts a proof once.
    const pairing = sent.find((request) => request.url.endsWith('/pair-agent'))
    if (!pairing) throw new Error('the pairing was not sent')
    const again = await fetch(pairing.clone())
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    const headers = new Headers(pairing.headers)
    headers.set('Idempotency-Key', 'a-new-key-for-a-replayed-proof')
    const replayed = await fetch(pairing.url, { method: 'POST', headers, body: await pairing.text() })
    expect(replayed.status).toBe(401)
    expect(((await replayed.json()) as { code: string }).code).toBe('proof_replayed')
  })

  test('behavior: a proof signed for another market is refused invalid_signature, and the code stays unclaimed', async () => {
    const market = createClient({ baseUrl: server.base })
    const registration = await market.register({ name: 'elsewhere-bot' })
    const owner = privateKeyToAccount(generatePrivateKey())
    const elsewhere = createClient({ baseUrl: server.base, market: 'https://another.market.example' })
    const refused = await refusal(elsewhere.pairAgent('bea', registration.pairingCode, owner))
    expect(refused).toMatchObject({ status: 401, code: 'invalid_signature' })
    const paired = await market.pairAgent('bea', registration.pairingCode, owner)
    expect(paired.agent).toMatchObject({ name: 'elsewhere-bot' })
  })

  test("behavior: the owner edits the profile and reads its invite code with a wallet client; another wallet's proof is 403", async () => {
    const market = createClient({ baseUrl: server.base })
    const registration = await market.register({ name: 'profile-bot' })
    const account = privateKeyToAccount(generatePrivateKey())
    // A wallet client, as a browser wallet is: it signs with its account.
    const wallet = createWalletClient({ account, chain: base, transport: http(server.base) })
    await market.pairAgent('cai', registration.pairingCode, wallet)
    const edited = await market.updateProfile(
      'cai',
      { bio: 'runs three bots', showcase: { site: 'cai.example' } },
      wallet,
    )
    expect(edited).toMatchObject({
      username: 'cai',
      bio: 'runs three bots',
      showcase: { site: 'cai.example' },
    })
    const invite = await market.getInvite('cai', account)
    expect(invite).toMatchObject({ username: 'cai' })
    expect(invite.inviteCode.length).toBeGreaterThan(0)

    const stranger = privateKeyToAccount(generatePrivateKey())
    expect((await refusal(market.updateProfile('cai', { bio: 'taken over' }, stranger))).status).toBe(403)
    expect((await refusal(market.getInvite('cai', stranger))).status).toBe(403)
    const user = await market.api.GET('/api/community/users/{username}', {
      params: { path: { username: 'cai' } },
    })
    expect(user.data?.bio).toBe('runs three bots')
  })
})
