import { describe, expect, test } from 'bun:test'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { expectProblemShape, testApp } from '../testing/http.ts'

const ann = privateKeyToAccount(generatePrivateKey())
const bob = privateKeyToAccount(generatePrivateKey())

type App = Awaited<ReturnType<typeof testApp>>

/**
 * Headers proving `account` for `method path` at the app's clock (or `skewSeconds` away from it), by the deprecated
 * EIP-191 proof CONTRACT.md names for profile edits and the invite code.
 */
const proof = (app: App, account: typeof ann, method: string, path: string, skewSeconds = 0) =>
  app.walletProof(account, method, path, skewSeconds)

/** The EIP-712 proof pairing takes, by `account` of POST `path` with the exact `body` text. */
const pairProof = (app: App, account: typeof ann, path: string, body: string, skewSeconds = 0) =>
  app.signedProof(account, 'POST', path, body, skewSeconds)

/** A pairing signed by `account`; `wallet` is the X-Wallet-Address sent (the account's own by default). */
async function pair(
  app: App,
  username: string,
  pairingCode: string,
  account = ann,
  wallet: string = account.address,
) {
  const path = `/api/community/users/${username}/pair-agent`
  const body = JSON.stringify({ pairingCode })
  const headers = { 'x-wallet-address': wallet, ...(await pairProof(app, account, path, body)) }
  return app.call('POST', path, { body, headers })
}

describe('POST /api/community/users/{username}/pair-agent', () => {
  test('behavior: binds the agent to a user created on first use; the owner shows on the agent, card and trust', async () => {
    const app = await testApp()
    const scout = await app.register('Scout')
    const response = await pair(app, 'Ann', scout.pairingCode.toLowerCase(), ann, ann.address.toLowerCase())
    expect(response.status).toBe(200)
    expect(response.json.agent).toMatchObject({ name: 'Scout', owner: { username: 'Ann' }, trustScore: 10 })
    expect(response.json.user).toMatchObject({
      username: 'Ann',
      bio: null,
      showcase: {},
      agents: [{ name: 'Scout' }],
    })
    expect((await app.call('GET', '/api/community/agents/Scout')).json.owner).toEqual({ username: 'Ann' })
    expect((await app.call('GET', '/api/agents/Scout/agent-card.json')).json._extensions.owner).toEqual({
      username: 'Ann',
      profileUrl: 'http://localhost:3000/users/Ann',
    })
    expect((await app.call('GET', '/api/community/users/ann')).json.agents).toHaveLength(1)
    const second = await app.register('Second')
    expect((await pair(app, 'ANN', second.pairingCode)).json.agent.owner).toEqual({ username: 'Ann' })
    expect(
      (await app.call('GET', '/api/community/users/Ann')).json.agents
        .map((a: { name: string }) => a.name)
        .sort(),
    ).toEqual(['Scout', 'Second'])
  })

  test('error: 404 unknown code, 409 used code, 403 username of another wallet, 400 malformed input', async () => {
    const app = await testApp()
    const scout = await app.register('Scout')
    const other = await app.register('Other')
    expectProblemShape(await pair(app, 'ann', 'AGM-2345-6789'), 404, 'pairing_code_not_found')
    expect((await pair(app, 'ann', scout.pairingCode)).status).toBe(200)
    expectProblemShape(await pair(app, 'ann', scout.pairingCode), 409, 'pairing_code_used')
    expectProblemShape(await pair(app, 'zed', scout.pairingCode, bob), 409, 'pairing_code_used')
    expectProblemShape(await pair(app, 'ann', other.pairingCode, bob), 403, 'forbidden')
    for (const bad of ['nope', 'AGM-0000-0000', '', 'AGM-ABCD-EFG']) {
      const response = await pair(app, 'ann', bad)
      expectProblemShape(response, 400, 'invalid_body')
      expect(response.json.errors[0].pointer).toBe('/pairingCode')
    }
    expectProblemShape(
      await pair(app, 'ann', other.pairingCode, ann, '0x1234'),
      400,
      'invalid_wallet_address',
    )
    expectProblemShape(
      await app.call('POST', '/api/community/users/ann/pair-agent', {
        body: { pairingCode: other.pairingCode },
      }),
      400,
      'invalid_wallet_address',
    )
    expectProblemShape(await pair(app, 'a', other.pairingCode), 400, 'invalid_username')
    expectProblemShape(await pair(app, "a'--", other.pairingCode), 400, 'invalid_username')
    expect((await app.call('GET', '/api/community/agents/Other')).json.owner).toBeNull()
    expect((await app.call('GET', '/api/community/users')).json.total).toBe(1)
  })

  test('behavior: two concurrent pairings of one code give one 200 and one 409', async () => {
    const app = await testApp()
    const scout = await app.register('Scout')
    const results = await Promise.all([
      pair(app, 'ann', scout.pairingCode),
      pair(app, 'bob', scout.pairingCode, bob),
    ])
    expect(results.map((r) => r.status).sort()).toEqual([200, 409])
  })

  test('error: without a fresh signature by the wallet it names, pairing is 401 and changes nothing', async () => {
    const app = await testApp()
    const scout = await app.register('Scout')
    const path = '/api/community/users/ann/pair-agent'
    const body = JSON.stringify({ pairingCode: scout.pairingCode })
    const attempt = (headers: Record<string, string>) =>
      app.call('POST', path, { body, headers: { 'x-wallet-address': ann.address, ...headers } })
    const missing = await attempt({})
    expectProblemShape(missing, 401, 'wallet_proof_required')
    expect(missing.json.detail).toContain(`path: "${path}"`)
    expect(missing.json.detail).toContain('X-Wallet-Scheme: eip712')
    expect(missing.headers.get('www-authenticate')).toStartWith('WalletSignature')
    expectProblemShape(await attempt(await pairProof(app, ann, path, body, -301)), 401, 'stale_timestamp')
    expectProblemShape(
      await attempt({ ...(await pairProof(app, ann, path, body)), 'x-wallet-signature': '0xdead' }),
      401,
      'invalid_signature',
    )
    expectProblemShape(await attempt(await pairProof(app, bob, path, body)), 401, 'invalid_signature')
    const elsewhere = '/api/community/users/bob/pair-agent'
    expectProblemShape(await attempt(await pairProof(app, ann, elsewhere, body)), 401, 'invalid_signature')
    expectProblemShape(await attempt(await proof(app, ann, 'POST', path)), 400, 'eip712_proof_required')
    expect((await app.call('GET', '/api/community/agents/Scout')).json.owner).toBeNull()
    expect((await app.call('GET', '/api/community/users')).json.total).toBe(0)
    expect((await pair(app, 'ann', scout.pairingCode)).status).toBe(200)
  })
})

describe('owner_invite at registration', () => {
  test('behavior: binds the new agent to the inviting user; its pairing code is already spent', async () => {
    const app = await testApp()
    await pair(app, 'ann', (await app.register('First')).pairingCode)
    const path = '/api/community/users/ann/invite'
    const invite = await app.call('GET', path, { headers: await proof(app, ann, 'GET', path) })
    expect(invite.status).toBe(200)
    expect(invite.json).toEqual({ username: 'ann', inviteCode: expect.stringMatching(/^inv_[0-9a-f]{32}$/) })
    const invited = await app.register('Invited', { owner_invite: invite.json.inviteCode })
    const agent = (await app.call('GET', '/api/community/agents/Invited')).json
    expect(agent.owner).toEqual({ username: 'ann' })
    expect(agent.trustScore).toBe(10)
    expectProblemShape(await pair(app, 'bob', invited.pairingCode, bob), 409, 'pairing_code_used')
  })

  test('error: an unknown invite code is 400 at /owner_invite and registers nothing', async () => {
    const app = await testApp()
    const response = await app.call('POST', '/api/agents/register', {
      body: { name: 'Invited', owner_invite: 'inv_nobody' },
    })
    expectProblemShape(response, 400, 'invalid_body')
    expect(response.json.errors).toEqual([{ pointer: '/owner_invite', detail: expect.any(String) }])
    expectProblemShape(await app.call('GET', '/api/community/agents/Invited'), 404)
  })
})

describe('users: list and profile', () => {
  test('behavior: the list pages with q, limit, offset; the profile holds no private field', async () => {
    const app = await testApp()
    const names = ['ann', 'bob_the_builder', 'carol']
    for (const [i, name] of names.entries()) {
      app.clock.advance(1000)
      await pair(
        app,
        name,
        (await app.register(`agent-${i}`)).pairingCode,
        privateKeyToAccount(generatePrivateKey()),
      )
    }
    const list = (await app.call('GET', '/api/community/users')).json
    expect(list).toMatchObject({ total: 3, limit: 20, offset: 0 })
    expect(list.users.map((u: { username: string }) => u.username)).toEqual([
      'carol',
      'bob_the_builder',
      'ann',
    ])
    expect(list.users[0]).toEqual({
      username: 'carol',
      bio: null,
      agentCount: 1,
      createdAt: expect.any(String),
    })
    expect((await app.call('GET', '/api/community/users?q=_THE_')).json.users).toHaveLength(1)
    expect((await app.call('GET', '/api/community/users?limit=1&offset=2')).json.users[0].username).toBe(
      'ann',
    )
    expectProblemShape(await app.call('GET', '/api/community/users?limit=0'), 400, 'invalid_query')
    const profile = await app.call('GET', '/api/community/users/CAROL')
    expect(Object.keys(profile.json).sort()).toEqual(['agents', 'bio', 'createdAt', 'showcase', 'username'])
    expect(profile.text).not.toMatch(/0x[0-9a-fA-F]{40}/)
    expect(profile.text).not.toContain('inv_')
    expectProblemShape(await app.call('GET', '/api/community/users/ghost'), 404, 'user_not_found')
  })
})

describe('wallet proof for profile edits and invite codes', () => {
  test("behavior: a fresh signature by the owner's wallet edits bio and showcase, under /api and /api/v1", async () => {
    const app = await testApp()
    await pair(app, 'ann', (await app.register('Scout')).pairingCode)
    const path = '/api/community/users/ann'
    const body = { bio: 'I build agents', showcase: { links: ['https://ann.example'], featured: 'Scout' } }
    const response = await app.call('PUT', path, { body, headers: await proof(app, ann, 'PUT', path, -299) })
    expect(response.status).toBe(200)
    expect(response.json).toMatchObject(body)
    const v1 = '/api/v1/community/users/ann'
    const again = await app.call('PUT', v1, {
      body: { bio: 'v1 too' },
      headers: await proof(app, ann, 'PUT', v1, 30),
    })
    expect(again.json).toMatchObject({ bio: 'v1 too', showcase: body.showcase })
    // More than 30 s ahead of the server clock is refused (299 s used to pass: a proof lived 10 minutes).
    const ahead = await app.call('PUT', v1, {
      body: { bio: 'later' },
      headers: await proof(app, ann, 'PUT', v1, 31),
    })
    expectProblemShape(ahead, 401, 'stale_timestamp')
  })

  test('error: missing, stale, malformed, replayed and foreign signatures are refused and change nothing', async () => {
    const app = await testApp()
    await pair(app, 'ann', (await app.register('Scout')).pairingCode)
    const path = '/api/community/users/ann'
    const edit = (headers: Record<string, string>) =>
      app.call('PUT', path, { body: { bio: 'hacked' }, headers })
    const missing = await edit({})
    expectProblemShape(missing, 401, 'wallet_proof_required')
    expect(missing.headers.get('www-authenticate')).toStartWith('WalletSignature')
    expectProblemShape(await edit(await proof(app, ann, 'PUT', path, -301)), 401, 'stale_timestamp')
    expectProblemShape(await edit(await proof(app, ann, 'PUT', path, 301)), 401, 'stale_timestamp')
    expectProblemShape(
      await edit({ ...(await proof(app, ann, 'PUT', path)), 'x-wallet-timestamp': 'soon' }),
      401,
      'stale_timestamp',
    )
    expectProblemShape(
      await edit({ ...(await proof(app, ann, 'PUT', path)), 'x-wallet-signature': '0xdead' }),
      401,
      'invalid_signature',
    )
    expectProblemShape(await edit(await proof(app, bob, 'PUT', path)), 403, 'forbidden')
    expectProblemShape(
      await edit(await proof(app, ann, 'GET', '/api/community/users/ann/invite')),
      403,
      'forbidden',
    )
    expectProblemShape(await app.call('GET', '/api/community/users/ann/invite'), 401, 'wallet_proof_required')
    expectProblemShape(
      await app.call('GET', '/api/community/users/ann/invite', {
        headers: await proof(app, bob, 'GET', '/api/community/users/ann/invite'),
      }),
      403,
    )
    expect((await app.call('GET', path)).json.bio).toBeNull()
  })

  test('error: a showcase that is not an object or is over 16 KiB is 400 at /showcase', async () => {
    const app = await testApp()
    await pair(app, 'ann', (await app.register('Scout')).pairingCode)
    const path = '/api/community/users/ann'
    for (const showcase of [['a'], 'text', { blob: 'x'.repeat(16 * 1024) }]) {
      const response = await app.call('PUT', path, {
        body: { showcase },
        headers: await proof(app, ann, 'PUT', path),
      })
      expectProblemShape(response, 400, 'invalid_body')
      expect(response.json.errors[0].pointer).toBe('/showcase')
    }
    expect((await app.call('GET', path)).json.showcase).toEqual({})
  })
})

describe('wallet proof errors say what to do', () => {
  test('error: a proof signed over another path is not called "another wallet": the detail names both causes and what to sign', async () => {
    const app = await testApp()
    const scout = await app.register('scout')
    expect((await app.pair('ann', scout.pairingCode, ann)).status).toBe(200)
    const path = '/api/community/users/ann'
    const wrongPath = await proof(app, ann, 'PUT', '/api/community/users/someone-else')
    const answer = await app.call('PUT', path, { body: { bio: 'x' }, headers: wrongPath })
    expectProblemShape(answer, 403, 'forbidden')
    expect(answer.json.detail).toContain('either another wallet signed, or the signed data differs')
    expect(answer.json.detail).toContain(`path: "${path}"`)
    expect((await app.call('GET', '/api/community/users/ann')).json.bio).toBeNull()
  })

  test('error: pairing without X-Wallet-Address says the header is missing, not malformed', async () => {
    const app = await testApp()
    const scout = await app.register('scout')
    const path = '/api/community/users/ann/pair-agent'
    const body = JSON.stringify({ pairingCode: scout.pairingCode })
    const headers = await pairProof(app, ann, path, body)
    const answer = await app.call('POST', path, { body, headers })
    expectProblemShape(answer, 400, 'invalid_wallet_address')
    expect(answer.json.detail).toContain('X-Wallet-Address is missing')
    const signedByBob = await pairProof(app, bob, path, body)
    const wrong = await app.call('POST', path, {
      body,
      headers: { ...signedByBob, 'x-wallet-address': ann.address },
    })
    expectProblemShape(wrong, 401, 'invalid_signature')
    expect(wrong.json.detail).toContain(`the wallet in X-Wallet-Address (${ann.address})`)
  })
})
