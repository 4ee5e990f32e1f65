import { strictEqual as equal, ok, deepStrictEqual as same } from 'node:assert/strict'
import type { AgentRecord } from '../Agent.ts'
import type { MilestoneRecord } from '../Milestone.ts'
import type { Store } from '../ports/Store.ts'
import type { SkillRecord } from '../Skill.ts'

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
    ownerUsername: null,
    lastSeen: null,
    lastActiveAt: T0,
    createdAt: T0,
    updatedAt: T0,
    revision: 1,
    verifiedMilestones: 0,
    claimedMilestones: 0,
    ...overrides,
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
        equal(await store.insertAgent(agent), 'inserted')
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
        await store.insertAgent(agent)
        equal((await store.getAgent(agent.name))?.skills[0]?.priceBaseUnits, price)
      }),
    )

    test(
      'error: a name taken in another case is refused, and two racing inserts give one winner',
      withStore(async (store) => {
        equal(await store.insertAgent(sampleAgent({ name: 'Twin' })), 'inserted')
        equal(
          await store.insertAgent(
            sampleAgent({ name: 'TWIN', apiKeyHash: 'other', pairingCodeHash: 'other' }),
          ),
          'name_taken',
        )
        const results = await Promise.all(
          Array.from({ length: 5 }, (_, i) =>
            store.insertAgent(sampleAgent({ name: 'race', apiKeyHash: `k${i}`, pairingCodeHash: `p${i}` })),
          ),
        )
        equal(results.filter((result) => result === 'inserted').length, 1)
      }),
    )

    test(
      'behavior: records handed out are copies',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent({ name: 'copy' }))
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
        await store.insertAgent(sampleAgent({ name: 'keyed', apiKeyHash: 'abc123' }))
        equal(await store.findAgentNameByKeyHash('abc123'), 'keyed')
        equal(await store.findAgentNameByKeyHash('zzz'), null)
      }),
    )

    test(
      'behavior: an update changes only the patched fields and bumps the revision',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent({ name: 'upd', bio: 'old', model: 'm' }))
        const updated = await store.updateAgent('UPD', { bio: 'new', basename: null, skills: [] }, at(10))
        ok(updated)
        equal(updated.bio, 'new')
        equal(updated.model, 'm')
        equal(updated.revision, 2)
        same(updated.updatedAt, at(10))
        same(updated.lastActiveAt, at(10))
        same(await store.getAgent('upd'), updated)
        const cleared = await store.updateAgent('upd', { bio: null }, at(11))
        equal(cleared?.bio, null)
        equal(await store.updateAgent('missing', { bio: 'x' }, at(1)), null)
      }),
    )

    test(
      'behavior: a heartbeat sets lastSeen and activity',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent({ name: 'beat' }))
        equal(await store.recordHeartbeat('BEAT', at(7)), true)
        const beaten = await store.getAgent('beat')
        same(beaten?.lastSeen, at(7))
        same(beaten?.lastActiveAt, at(7))
        equal(await store.recordHeartbeat('missing', at(7)), false)
      }),
    )

    test(
      'behavior: the list is most recently active first, then by name, with limit, offset and total',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent({ name: 'bravo', lastActiveAt: at(1) }))
        await store.insertAgent(sampleAgent({ name: 'Alpha', lastActiveAt: at(1) }))
        await store.insertAgent(sampleAgent({ name: 'charlie', lastActiveAt: at(5) }))
        await store.insertAgent(sampleAgent({ name: 'delta', lastActiveAt: at(0) }))
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
        await store.insertAgent(sampleAgent({ name: 'WebScout', bio: 'Finds pages' }))
        await store.insertAgent(sampleAgent({ name: 'pricer', bio: 'quotes 100% of prices' }))
        await store.insertAgent(sampleAgent({ name: 'under_score', bio: null }))
        await store.insertAgent(sampleAgent({ name: 'plain', bio: 'nothing special' }))
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
        await store.insertAgent(sampleAgent({ name: 'miles', lastActiveAt: at(0) }))
        await store.insertAgent(sampleAgent({ name: 'other' }))
        await store.insertMilestone(
          sampleMilestone({ id: 'm1', agentName: 'miles', date: '2026-01-02', createdAt: at(1) }),
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
        )
        await store.insertMilestone(
          sampleMilestone({ id: 'm3', agentName: 'miles', date: '2026-01-02', createdAt: at(2) }),
        )
        await store.insertMilestone(sampleMilestone({ id: 'o1', agentName: 'other', createdAt: at(2) }))
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
      'behavior: ping resolves on a working store',
      withStore(async (store) => {
        await store.ping()
      }),
    )
  })
}
