import { strictEqual as equal, deepStrictEqual as same } from 'node:assert/strict'
import { at, claimOf, type StoreTest, sampleAgent, sampleUser, type WithStore } from './fixtures.ts'

/** The conformance cases of the UserStore: users, pairing codes and claims. */
export function userStoreCases(test: StoreTest, withStore: WithStore): void {
  test(
    'behavior: a new pairing code replaces an unspent one (with its expiry); a spent one cannot be replaced',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent({ name: 'pup', pairingCodeHash: 'old-code' }), [])
      equal(await store.setPairingCode('PUP', 'new-code', at(50)), true)
      equal(await store.findAgentByPairingCodeHash('old-code'), null)
      const renewed = await store.findAgentByPairingCodeHash('new-code')
      equal(renewed?.name, 'pup')
      same(renewed?.pairingCodeExpiresAt, at(50))
      await store.claimAgent(claimOf('new-code', sampleUser({ username: 'Ann' }), 'pup'))
      equal(await store.setPairingCode('pup', 'third-code', at(60)), false)
      equal(await store.findAgentByPairingCodeHash('third-code'), null)
      equal(await store.setPairingCode('nobody', 'x', at(60)), false)
    }),
  )

  test(
    'behavior: a claim spends the code once, creates the user, binds the agent and appends its event',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent({ name: 'pet', pairingCodeHash: 'code-1' }), [])
      equal((await store.findAgentByPairingCodeHash('code-1'))?.name, 'pet')
      equal(await store.findAgentByPairingCodeHash('nope'), null)
      same(await store.claimAgent(claimOf('code-1', sampleUser({ username: 'Ann' }), 'pet')), {
        outcome: 'claimed',
        agentName: 'pet',
      })
      const agent = await store.getAgent('pet')
      equal(agent?.ownerUsername, 'Ann')
      equal(agent?.ownerProven, true)
      same(agent?.pairingCodeUsedAt, at(9))
      equal((await store.getUser('ann'))?.walletAddress, '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed')
      equal((await store.listEvents({ limit: 5 }))[0]?.kind, 'agent.claimed')
      same(
        await store.claimAgent(
          claimOf('code-1', sampleUser({ username: 'bob', inviteCode: 'inv_b' }), 'pet'),
        ),
        {
          outcome: 'code_used',
        },
      )
      same(await store.claimAgent(claimOf('code-x', sampleUser(), 'pet')), { outcome: 'unknown_code' })
      equal((await store.listEvents({ limit: 5 })).length, 1)
    }),
  )

  test(
    'error: a username held by another wallet refuses the claim and spends nothing',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent({ name: 'a1', pairingCodeHash: 'c1' }), [])
      await store.insertAgent(sampleAgent({ name: 'a2', pairingCodeHash: 'c2' }), [])
      await store.claimAgent(claimOf('c1', sampleUser(), 'a1'))
      const thief = sampleUser({
        walletAddress: '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
        inviteCode: 'inv_t',
      })
      same(await store.claimAgent(claimOf('c2', thief, 'a2')), { outcome: 'wallet_mismatch' })
      equal((await store.getAgent('a2'))?.pairingCodeUsedAt, null)
      equal((await store.getAgent('a2'))?.ownerUsername, null)
      equal((await store.getAgent('a2'))?.ownerProven, false)
      same(await store.claimAgent(claimOf('c2', sampleUser({ inviteCode: 'ignored' }), 'a2')), {
        outcome: 'claimed',
        agentName: 'a2',
      })
      equal((await store.getUser('ann'))?.inviteCode, 'inv_ann')
      same((await store.listAgentsOwnedBy('ANN')).map((agent) => agent.name).sort(), ['a1', 'a2'])
    }),
  )

  test(
    "behavior: a user's agents come most recently active first, then by name",
    withStore(async (store) => {
      const owned = (name: string, minutes: number) =>
        store.insertAgent(
          sampleAgent({
            name,
            pairingCodeHash: `p-${name}`,
            ownerUsername: 'ann',
            lastActiveAt: at(minutes),
          }),
          [],
        )
      await owned('b-tie', 5)
      await owned('old', 1)
      await owned('a-tie', 5)
      await owned('new', 9)
      await store.insertAgent(
        sampleAgent({ name: 'stranger', pairingCodeHash: 'p-s', lastActiveAt: at(20) }),
        [],
      )
      same(
        (await store.listAgentsOwnedBy('Ann')).map((agent) => agent.name),
        ['new', 'a-tie', 'b-tie', 'old'],
      )
    }),
  )

  test(
    'behavior: racing claims of one code give one winner',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent({ name: 'prize', pairingCodeHash: 'hot' }), [])
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          store.claimAgent(claimOf('hot', sampleUser({ username: `u${i}`, inviteCode: `i${i}` }), 'prize')),
        ),
      )
      equal(results.filter((result) => result.outcome === 'claimed').length, 1)
      equal(results.filter((result) => result.outcome === 'code_used').length, 5)
      equal((await store.listUsers({ limit: 10, offset: 0 })).total, 1)
    }),
  )

  test(
    'behavior: users are found by invite code, updated, and listed newest first with owned-agent counts',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent({ name: 'x1', pairingCodeHash: 'h1' }), [])
      await store.claimAgent({
        ...claimOf('h1', sampleUser({ username: 'early', bio: 'Builds bots', inviteCode: 'inv_e' }), 'x1'),
        at: at(1),
      })
      await store.insertAgent(sampleAgent({ name: 'x2', pairingCodeHash: 'h2' }), [])
      const late = sampleUser({
        username: 'late_1',
        inviteCode: 'inv_l',
        createdAt: at(5),
        walletAddress: '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
      })
      await store.claimAgent(claimOf('h2', late, 'x2'))
      equal((await store.findUserByInviteCode('inv_l'))?.username, 'late_1')
      equal(await store.findUserByInviteCode('inv_zzz'), null)
      const updated = await store.updateUser(
        'LATE_1',
        { bio: '100% human', showcase: { links: ['https://a.test'], n: 1 } },
        at(8),
      )
      same(updated?.showcase, { links: ['https://a.test'], n: 1 })
      same(updated?.updatedAt, at(8))
      equal(await store.updateUser('ghost', { bio: 'x' }, at(8)), null)
      const listed = await store.listUsers({ limit: 10, offset: 0 })
      same(
        listed.users.map((user) => [user.username, user.agentCount]),
        [
          ['late_1', 1],
          ['early', 1],
        ],
      )
      same(
        (await store.listUsers({ q: '%', limit: 10, offset: 0 })).users.map((u) => u.username),
        ['late_1'],
      )
      same(
        (await store.listUsers({ q: 'BOTS', limit: 10, offset: 0 })).users.map((u) => u.username),
        ['early'],
      )
      same((await store.listUsers({ q: '_', limit: 1, offset: 0 })).total, 1)
      equal((await store.listUsers({ limit: 1, offset: 1 })).users[0]?.username, 'early')
    }),
  )
}
