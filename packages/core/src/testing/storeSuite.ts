import { strictEqual as equal, ok, deepStrictEqual as same } from 'node:assert/strict'
import type { AgentRecord } from '../Agent.ts'
import type { FeedEventInput } from '../Feed.ts'
import type { MilestoneRecord } from '../Milestone.ts'
import type { AgentClaim, OnlineEvent, Store } from '../ports/Store.ts'
import type { SkillRecord } from '../Skill.ts'
import type { UserRecord } from '../User.ts'

/** The part of a test runner the suite needs; `bun:test`, `node:test` and vitest all fit. */
export type TestRunner = {
  describe(name: string, body: () => void): void
  test(name: string, body: () => Promise<void> | void): void
}

const T0 = new Date('2026-01-01T00:00:00.000Z')
const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000)

/** A free skill record for tests; overrides make it purchasable or rename it. */
export function sampleSkill(overrides: Partial<SkillRecord> = {}): SkillRecord {
  return {
    name: 'Ping',
    slug: 'ping',
    description: null,
    type: 'free',
    priceBaseUnits: null,
    currency: 'USDC',
    sla: null,
    url: null,
    ...overrides,
  }
}

/** A complete agent record for store tests. */
export function sampleAgent(overrides: Partial<AgentRecord> = {}): AgentRecord {
  return {
    name: 'sample-agent',
    bio: null,
    platform: 'other',
    model: null,
    walletAddress: null,
    basename: null,
    skills: [],
    status: 'free',
    apiKeyHash: `hash-of-${overrides.name ?? 'sample-agent'}`,
    pairingCodeHash: `pairing-of-${overrides.name ?? 'sample-agent'}`,
    pairingCodeUsedAt: null,
    ownerUsername: null,
    lastSeen: null,
    lastActiveAt: T0,
    createdAt: T0,
    updatedAt: T0,
    revision: 1,
    verifiedMilestones: 0,
    claimedMilestones: 0,
    completedTasks: 0,
    ...overrides,
  }
}

/** A complete user record for store tests. */
export function sampleUser(overrides: Partial<UserRecord> = {}): UserRecord {
  return {
    username: 'ann',
    walletAddress: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
    bio: null,
    showcase: {},
    inviteCode: `inv_${overrides.username ?? 'ann'}`,
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  }
}

function sampleEvent(overrides: Partial<FeedEventInput> = {}): FeedEventInput {
  return {
    kind: 'agent.updated',
    at: T0,
    agent: 'sample-agent',
    summary: 'something happened',
    data: { fields: ['bio'] },
    ...overrides,
  }
}

function online(name: string, minute: number): OnlineEvent {
  return {
    event: sampleEvent({ kind: 'agent.online', agent: name, at: at(minute), data: {} }),
    notSeenSince: at(minute - 5),
  }
}

function claimOf(pairingCodeHash: string, user: UserRecord, agentName: string): AgentClaim {
  return {
    pairingCodeHash,
    newUser: user,
    at: at(9),
    event: sampleEvent({ kind: 'agent.claimed', agent: agentName, data: { owner: user.username } }),
  }
}

function sampleMilestone(overrides: Partial<MilestoneRecord>): MilestoneRecord {
  return {
    id: `ms_${Math.random().toString(16).slice(2)}`,
    agentName: 'sample-agent',
    date: '2026-01-01',
    title: 'a milestone',
    description: null,
    proof: null,
    trust: 'claimed',
    createdAt: T0,
    ...overrides,
  }
}

/**
 * The conformance suite every Store adapter must pass. `makeStore` returns a fresh, empty store per test.
 * @example storeSuite({ describe, test }, 'memoryStore', async () => memoryStore())
 */
export function storeSuite(runner: TestRunner, adapterName: string, makeStore: () => Promise<Store>): void {
  const { describe, test } = runner
  const withStore = (body: (store: Store) => Promise<void>) => async () => {
    const store = await makeStore()
    try {
      await body(store)
    } finally {
      await store.close()
    }
  }

  describe(`Store conformance: ${adapterName}`, () => {
    test(
      'behavior: an inserted agent reads back equal, by any case of its name',
      withStore(async (store) => {
        const agent = sampleAgent({
          name: 'Scout_1',
          bio: 'finds things',
          model: 'm-1',
          walletAddress: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
          skills: [
            {
              name: 'Search',
              slug: 'search',
              description: 'web search',
              type: 'purchasable',
              priceBaseUnits: 10_000n,
              currency: 'USDC',
              sla: '5s',
              url: 'https://example.com/search',
            },
            sampleSkill(),
          ],
          lastSeen: at(3),
        })
        equal(await store.insertAgent(agent, []), 'inserted')
        same(await store.getAgent('scout_1'), agent)
        same(await store.getAgent('SCOUT_1'), agent)
        equal(await store.getAgent('nobody'), null)
      }),
    )

    test(
      'behavior: prices keep exact base units beyond double precision',
      withStore(async (store) => {
        const price = 999_999_999_999_999n
        const agent = sampleAgent({
          skills: [sampleSkill({ name: 'Big', slug: 'big', type: 'purchasable', priceBaseUnits: price })],
        })
        await store.insertAgent(agent, [])
        equal((await store.getAgent(agent.name))?.skills[0]?.priceBaseUnits, price)
      }),
    )

    test(
      'error: a name taken in another case is refused, and two racing inserts give one winner',
      withStore(async (store) => {
        equal(await store.insertAgent(sampleAgent({ name: 'Twin' }), []), 'inserted')
        equal(
          await store.insertAgent(
            sampleAgent({ name: 'TWIN', apiKeyHash: 'other', pairingCodeHash: 'other' }),
            [],
          ),
          'name_taken',
        )
        const results = await Promise.all(
          Array.from({ length: 5 }, (_, i) =>
            store.insertAgent(
              sampleAgent({ name: 'race', apiKeyHash: `k${i}`, pairingCodeHash: `p${i}` }),
              [],
            ),
          ),
        )
        equal(results.filter((result) => result === 'inserted').length, 1)
      }),
    )

    test(
      'behavior: records handed out are copies',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent({ name: 'copy' }), [])
        const first = await store.getAgent('copy')
        ok(first)
        first.bio = 'changed'
        first.lastActiveAt.setTime(0)
        equal((await store.getAgent('copy'))?.bio, null)
        same((await store.getAgent('copy'))?.lastActiveAt, T0)
      }),
    )

    test(
      'behavior: an agent is found by its key hash',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent({ name: 'keyed', apiKeyHash: 'abc123' }), [])
        equal(await store.findAgentNameByKeyHash('abc123'), 'keyed')
        equal(await store.findAgentNameByKeyHash('zzz'), null)
      }),
    )

    test(
      'behavior: an update changes only the patched fields and bumps the revision',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent({ name: 'upd', bio: 'old', model: 'm' }), [])
        const updated = await store.updateAgent('UPD', { bio: 'new', basename: null, skills: [] }, at(10), [])
        ok(updated)
        equal(updated.bio, 'new')
        equal(updated.model, 'm')
        equal(updated.revision, 2)
        same(updated.updatedAt, at(10))
        same(updated.lastActiveAt, at(10))
        same(await store.getAgent('upd'), updated)
        const cleared = await store.updateAgent('upd', { bio: null }, at(11), [])
        equal(cleared?.bio, null)
        equal(await store.updateAgent('missing', { bio: 'x' }, at(1), []), null)
      }),
    )

    test(
      'behavior: a heartbeat sets lastSeen and activity',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent({ name: 'beat' }), [])
        equal(await store.recordHeartbeat('BEAT', at(7), online('beat', 7)), true)
        const beaten = await store.getAgent('beat')
        same(beaten?.lastSeen, at(7))
        same(beaten?.lastActiveAt, at(7))
        equal(await store.recordHeartbeat('missing', at(7), online('missing', 7)), false)
      }),
    )

    test(
      'behavior: the list is most recently active first, then by name, with limit, offset and total',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent({ name: 'bravo', lastActiveAt: at(1) }), [])
        await store.insertAgent(sampleAgent({ name: 'Alpha', lastActiveAt: at(1) }), [])
        await store.insertAgent(sampleAgent({ name: 'charlie', lastActiveAt: at(5) }), [])
        await store.insertAgent(sampleAgent({ name: 'delta', lastActiveAt: at(0) }), [])
        const page = await store.listAgents({ limit: 10, offset: 0 })
        same(
          page.agents.map((agent) => agent.name),
          ['charlie', 'Alpha', 'bravo', 'delta'],
        )
        equal(page.total, 4)
        const second = await store.listAgents({ limit: 2, offset: 1 })
        same(
          second.agents.map((agent) => agent.name),
          ['Alpha', 'bravo'],
        )
        equal(second.total, 4)
        equal((await store.listAgents({ limit: 2, offset: 10 })).agents.length, 0)
      }),
    )

    test(
      'behavior: q is a literal, case-insensitive substring of name or bio (% and _ match themselves)',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent({ name: 'WebScout', bio: 'Finds pages' }), [])
        await store.insertAgent(sampleAgent({ name: 'pricer', bio: 'quotes 100% of prices' }), [])
        await store.insertAgent(sampleAgent({ name: 'under_score', bio: null }), [])
        await store.insertAgent(sampleAgent({ name: 'plain', bio: 'nothing special' }), [])
        const names = async (q: string) =>
          (await store.listAgents({ q, limit: 10, offset: 0 })).agents.map((a) => a.name).sort()
        same(await names('scout'), ['WebScout'])
        same(await names('FINDS'), ['WebScout'])
        same(await names('%'), ['pricer'])
        same(await names('_'), ['under_score'])
        same(await names('r_s'), ['under_score'])
        same(await names('zzz'), [])
        equal((await store.listAgents({ q: 'p', limit: 1, offset: 0 })).total, 3)
      }),
    )

    test(
      'behavior: milestones count on their agent and list newest date first, latest recorded first',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent({ name: 'miles', lastActiveAt: at(0) }), [])
        await store.insertAgent(sampleAgent({ name: 'other' }), [])
        await store.insertMilestone(
          sampleMilestone({ id: 'm1', agentName: 'miles', date: '2026-01-02', createdAt: at(1) }),
          [],
        )
        await store.insertMilestone(
          sampleMilestone({
            id: 'm2',
            agentName: 'miles',
            date: '2026-03-01',
            proof: 'https://x.test',
            trust: 'verified',
            createdAt: at(2),
          }),
          [],
        )
        await store.insertMilestone(
          sampleMilestone({ id: 'm3', agentName: 'miles', date: '2026-01-02', createdAt: at(2) }),
          [],
        )
        await store.insertMilestone(sampleMilestone({ id: 'o1', agentName: 'other', createdAt: at(2) }), [])
        const listed = await store.listMilestones('MILES', 10)
        same(
          listed.map((milestone) => milestone.id),
          ['m2', 'm3', 'm1'],
        )
        equal(listed[0]?.proof, 'https://x.test')
        same(listed[0]?.createdAt, at(2))
        same(
          (await store.listMilestones('miles', 2)).map((milestone) => milestone.id),
          ['m2', 'm3'],
        )
        const agent = await store.getAgent('miles')
        equal(agent?.verifiedMilestones, 1)
        equal(agent?.claimedMilestones, 2)
        same(agent?.lastActiveAt, at(2))
      }),
    )

    test(
      'behavior: events written with an action are listed newest first, paged by after and before',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent({ name: 'evt' }), [
          sampleEvent({ kind: 'agent.registered', agent: 'evt', data: { platform: 'other' } }),
          sampleEvent({ kind: 'skill.published', agent: 'evt', data: { skill: { slug: 's' } } }),
        ])
        await store.updateAgent('evt', { bio: 'b' }, at(1), [sampleEvent({ agent: 'evt', at: at(1) })])
        await store.insertMilestone(sampleMilestone({ agentName: 'evt' }), [
          sampleEvent({ kind: 'milestone.recorded', agent: 'evt' }),
        ])
        const all = await store.listEvents({ limit: 10 })
        same(
          all.map((event) => event.kind),
          ['milestone.recorded', 'agent.updated', 'skill.published', 'agent.registered'],
        )
        const ids = all.map((event) => Number(event.id))
        ok(
          ids.every((id, i) => i === 0 || id < (ids[i - 1] ?? 0)),
          'ids increase with time',
        )
        same(all[2]?.data, { skill: { slug: 's' } })
        same(all[1]?.at, at(1))
        const [newest, second, third, oldest] = all.map((event) => event.id)
        same(
          (await store.listEvents({ limit: 2 })).map((e) => e.id),
          [newest, second],
        )
        same(
          (await store.listEvents({ limit: 2, after: oldest })).map((e) => e.id),
          [second, third],
        )
        same(
          (await store.listEvents({ limit: 10, after: second })).map((e) => e.id),
          [newest],
        )
        same(
          (await store.listEvents({ limit: 2, before: second })).map((e) => e.id),
          [third, oldest],
        )
        same(await store.listEvents({ limit: 5, after: newest }), [])
      }),
    )

    test(
      'behavior: a heartbeat appends agent.online only when the agent was not live',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent({ name: 'blink' }), [])
        await store.recordHeartbeat('blink', at(10), online('blink', 10))
        await store.recordHeartbeat('blink', at(14), online('blink', 14))
        await store.recordHeartbeat('blink', at(15), online('blink', 15))
        equal((await store.listEvents({ limit: 10 })).length, 1)
        await store.recordHeartbeat('blink', at(21), online('blink', 21))
        equal((await store.listEvents({ limit: 10 })).length, 2)
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
        same(await store.claimAgent(claimOf('c2', sampleUser({ inviteCode: 'ignored' }), 'a2')), {
          outcome: 'claimed',
          agentName: 'a2',
        })
        equal((await store.getUser('ann'))?.inviteCode, 'inv_ann')
        same((await store.listAgentsOwnedBy('ANN')).map((agent) => agent.name).sort(), ['a1', 'a2'])
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

    test(
      'behavior: ping resolves on a working store',
      withStore(async (store) => {
        await store.ping()
      }),
    )
  })
}
