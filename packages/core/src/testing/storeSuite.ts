import { strictEqual as equal, ok, deepStrictEqual as same } from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import type { Address, Hex } from 'viem'
import type { AgentRecord } from '../Agent.ts'
import type { FeedEventInput, FeedEventKind } from '../Feed.ts'
import type { MilestoneRecord } from '../Milestone.ts'
import type { AgentClaim, OnlineEvent, Store, TaskListQuery } from '../ports/Store.ts'
import type { SkillRecord } from '../Skill.ts'
import type { IdempotentAnswer, PendingCheck, TaskPayment, TaskRecord } from '../Task.ts'
import type { UserRecord } from '../User.ts'
import { mailStoreCases } from './mailCases.ts'

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
    pairingCodeExpiresAt: null,
    ownerUsername: null,
    lastSeen: null,
    lastActiveAt: T0,
    createdAt: T0,
    updatedAt: T0,
    revision: 1,
    verifiedMilestones: 0,
    claimedMilestones: 0,
    completedTasks: 0,
    trustCreditBaseUnits: 0n,
    payingBuyers: 0,
    ownerProven: false,
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

/** A complete task awaiting payment for store tests: a unique id, a paid skill of 'sample-agent', nothing else set. */
export function sampleTask(overrides: Partial<TaskRecord> = {}): TaskRecord {
  return {
    id: `task_${randomBytes(16).toString('hex')}`,
    agentName: 'sample-agent',
    skillName: 'Search',
    skillSlug: 'search',
    sla: '1h',
    status: 'pending_payment',
    priceBaseUnits: 10_000n,
    payTo: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
    params: null,
    buyer: null,
    buyerEmail: null,
    buyerWallet: null,
    payment: null,
    pendingCheck: null,
    resultUrl: null,
    idempotency: null,
    clientKey: '',
    expiresAt: null,
    createdAt: T0,
    completedAt: null,
    ...overrides,
  }
}

/** A 32-byte hex value (a tx hash or an escrow task id) that differs for each `n` and `tag`. */
const hex32 = (n: number, tag = 0xa): Hex => `0x${tag.toString(16)}${n.toString(16).padStart(63, '0')}`

function samplePayment(n: number, overrides: Partial<TaskPayment> = {}): TaskPayment {
  return {
    method: 'transfer',
    txHash: hex32(n),
    escrowTaskId: null,
    amountBaseUnits: 10_000n,
    from: '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
    at: at(30),
    ...overrides,
  }
}

/** A paid task: status and payment set together. */
function paidTask(n: number, overrides: Partial<TaskRecord> = {}): TaskRecord {
  return sampleTask({ status: 'paid', payment: samplePayment(n), ...overrides })
}

function idempotencyOf(key: string, body: unknown = { ok: true }): IdempotentAnswer {
  return { key, fingerprint: `fp-${key}`, status: 201, body }
}

function taskEvent(kind: FeedEventKind, task: TaskRecord): FeedEventInput {
  return sampleEvent({ kind, agent: task.agentName, data: { task_id: task.id } })
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

  const allTasks: TaskListQuery = {
    statuses: ['pending_payment', 'paid', 'completed'],
    order: 'work_queue',
    limit: 50,
    offset: 0,
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
      'behavior: a write that arrives late (it waited for the lock) never moves lastSeen or activity back',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent({ name: 'late' }), [])
        await store.recordHeartbeat('late', at(9), online('late', 9))
        await store.recordHeartbeat('late', at(8), online('late', 8))
        await store.updateAgent('late', { bio: 'late edit' }, at(7), [])
        const agent = await store.getAgent('late')
        same(agent?.lastSeen, at(9))
        same(agent?.lastActiveAt, at(9))
        equal(agent?.bio, 'late edit')
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
      'behavior: racing heartbeats of several agents each answer, one agent.online each, lastSeen the latest',
      withStore(async (store) => {
        const names = ['racer-a', 'racer-b', 'racer-c']
        for (const name of names) await store.insertAgent(sampleAgent({ name }), [])
        const beats = names.flatMap((name) => [1, 2, 3].map((minute) => ({ name, minute })))
        const answers = await Promise.all([
          ...beats.map(({ name, minute }) => store.recordHeartbeat(name, at(minute), online(name, minute))),
          store.recordHeartbeat('racer-missing', at(3), online('racer-missing', 3)),
        ])
        same(answers, [...beats.map(() => true), false])
        for (const name of names) same((await store.getAgent(name))?.lastSeen, at(3))
        const onlineEvents = (await store.listEvents({ limit: 50 })).filter(
          (event) => event.kind === 'agent.online',
        )
        same(onlineEvents.map((event) => event.agent).sort(), names)
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
      'behavior: paid offers are the priced purchasable skills of agents with a wallet, paged by (agent, slug)',
      withStore(async (store) => {
        const wallet = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
        const paid = (slug: string) =>
          sampleSkill({ name: slug, slug, type: 'purchasable', priceBaseUnits: 5n })
        const agent = (name: string, walletAddress: typeof wallet | null, skills = [paid('b'), paid('a')]) =>
          sampleAgent({ name, walletAddress, skills, apiKeyHash: `k-${name}`, pairingCodeHash: `p-${name}` })
        await store.insertAgent(agent('Zed', wallet), [])
        await store.insertAgent(
          agent('amy', wallet, [paid('x'), sampleSkill({ name: 'free', slug: 'free' })]),
          [],
        )
        await store.insertAgent(agent('nowallet', null), [])
        const all = await store.listPaidOffers(null, 10)
        same(
          all.map((offer) => `${offer.agent}/${offer.slug}`),
          ['amy/x', 'Zed/a', 'Zed/b'],
        )
        same(all[1], {
          agentKey: 'zed',
          agent: 'Zed',
          slug: 'a',
          name: 'a',
          description: null,
          amountBaseUnits: 5n,
        })
        same(
          (await store.listPaidOffers({ agentKey: 'amy', slug: 'x' }, 1)).map((offer) => offer.slug),
          ['a'],
        )
        same(await store.listPaidOffers({ agentKey: 'zed', slug: 'b' }, 5), [])
      }),
    )

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
      'behavior: an inserted task reads back equal, by any case of its agent name, exact amounts included',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent({ name: 'Seller_1' }), [])
        await store.insertAgent(sampleAgent({ name: 'other' }), [])
        const pending = sampleTask({
          agentName: 'Seller_1',
          params: { query: 'cats', depth: 2, tags: ['a', 'b'], nested: { on: true, none: null } },
          buyer: 'buyer-bot',
          buyerEmail: 'buyer@example.com',
          buyerWallet: '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
          pendingCheck: { txHash: hex32(1), signature: null, attempts: 3, nextAt: at(7) },
          idempotency: idempotencyOf('key-1', { task_id: 'x', list: [1, 'two'] }),
          createdAt: at(1),
        })
        const paid = paidTask(2, {
          agentName: 'Seller_1',
          priceBaseUnits: 999_999_999_999n,
          payment: samplePayment(2, {
            method: 'escrow',
            escrowTaskId: hex32(2, 0xe),
            amountBaseUnits: 2n ** 70n,
            at: at(5),
          }),
          createdAt: at(2),
        })
        const completed = paidTask(3, {
          agentName: 'Seller_1',
          status: 'completed',
          resultUrl: 'https://example.com/result/3',
          completedAt: at(9),
        })
        for (const task of [pending, paid, completed]) {
          same(await store.insertTask(task, [taskEvent('task.created', task)]), { outcome: 'inserted' })
        }
        same(await store.getTask('Seller_1', pending.id), pending)
        same(await store.getTask('seller_1', pending.id), pending)
        same(await store.getTask('SELLER_1', paid.id), paid)
        equal((await store.getTask('seller_1', paid.id))?.payment?.amountBaseUnits, 2n ** 70n)
        same(await store.getTask('Seller_1', completed.id), completed)
        equal(await store.getTask('other', pending.id), null)
        equal(await store.getTask('nobody', pending.id), null)
        equal(await store.getTask('Seller_1', 'task_unknown'), null)
        same(
          (await store.listEvents({ limit: 50 })).map((event) => event.kind),
          ['task.created', 'task.created', 'task.created'],
        )
      }),
    )

    test(
      'error: inserting a task paid by a tx hash or escrow task id another task holds inserts nothing',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent(), [])
        const first = paidTask(1, { payment: samplePayment(1, { escrowTaskId: hex32(1, 0xe) }) })
        same(await store.insertTask(first, [taskEvent('task.created', first)]), { outcome: 'inserted' })
        equal(await store.findTaskIdByTxHash(hex32(1)), first.id)
        equal(await store.findTaskIdByTxHash(hex32(99)), null)

        const sameHash = paidTask(1)
        same(await store.insertTask(sameHash, [taskEvent('task.created', sameHash)]), {
          outcome: 'tx_already_used',
        })
        equal(await store.getTask('sample-agent', sameHash.id), null)

        const sameEscrow = paidTask(2, { payment: samplePayment(2, { escrowTaskId: hex32(1, 0xe) }) })
        same(await store.insertTask(sameEscrow, [taskEvent('task.created', sameEscrow)]), {
          outcome: 'escrow_task_id_used',
        })
        equal(await store.getTask('sample-agent', sameEscrow.id), null)
        equal(await store.findTaskIdByTxHash(hex32(2)), null)
        equal(await store.findTaskIdByTxHash(hex32(1)), first.id)
        equal((await store.listEvents({ limit: 50 })).length, 1)
        equal((await store.listTasks('sample-agent', allTasks)).total, 1)
      }),
    )

    test(
      "behavior: an escrow deposit is claimed per (buyer, on-chain taskId), as the contract keys it: another buyer's deposit under the same taskId pays its own task",
      withStore(async (store) => {
        await store.insertAgent(sampleAgent(), [])
        const buyerA = '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359'
        const buyerB = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
        const escrowOf = (n: number, from: Address) =>
          samplePayment(n, { method: 'escrow', escrowTaskId: hex32(7, 0xe), from })
        const squatter = paidTask(1, { payment: escrowOf(1, buyerA) })
        same(await store.insertTask(squatter, []), { outcome: 'inserted' })
        const victim = paidTask(2, { payment: escrowOf(2, buyerB) })
        same(await store.insertTask(victim, []), { outcome: 'inserted' })
        const pending = sampleTask()
        await store.insertTask(pending, [])
        equal(await store.markTaskPaid(pending.id, escrowOf(3, buyerB), []), 'escrow_task_id_used')
        equal((await store.getTask('sample-agent', pending.id))?.status, 'pending_payment')
      }),
    )

    test(
      "behavior: an Idempotency-Key is scoped by client: another client's same key neither replays nor blocks",
      withStore(async (store) => {
        await store.insertAgent(sampleAgent(), [])
        const mine = sampleTask({ clientKey: 'client-a', idempotency: idempotencyOf('shared', { mine: 1 }) })
        const theirs = sampleTask({
          clientKey: 'client-b',
          idempotency: idempotencyOf('shared', { theirs: 1 }),
        })
        same(await store.insertTask(mine, []), { outcome: 'inserted' })
        same(await store.insertTask(theirs, []), { outcome: 'inserted' })
        same(await store.findIdempotentAnswer('sample-agent', 'client-a', 'shared'), mine.idempotency)
        same(await store.findIdempotentAnswer('sample-agent', 'client-b', 'shared'), theirs.idempotency)
        equal(await store.findIdempotentAnswer('sample-agent', 'client-c', 'shared'), null)
        const retry = sampleTask({
          clientKey: 'client-a',
          idempotency: idempotencyOf('shared', { again: 1 }),
        })
        same(await store.insertTask(retry, []), { outcome: 'replay', answer: mine.idempotency })
      }),
    )

    test(
      'behavior: unpaid tasks expire at expiresAt (never paid after it), drop their checks, and are purged after retention',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent(), [])
        const check = { txHash: hex32(40), signature: null, attempts: 0, nextAt: at(1) }
        const early = sampleTask({ expiresAt: at(10), pendingCheck: check, clientKey: 'c' })
        const late = sampleTask({ expiresAt: at(20) })
        const paid = paidTask(41, { expiresAt: at(5) })
        for (const task of [early, late, paid]) await store.insertTask(task, [])
        equal(await store.countPendingChecks('c'), 1)
        equal(await store.countPendingChecks('other'), 0)
        equal(await store.markTaskPaid(early.id, samplePayment(42, { at: at(10) }), []), 'not_pending')
        same(await store.expireTasks(at(10), at(0), 100), { expired: 1, purged: 0 })
        const expired = await store.getTask('sample-agent', early.id)
        equal(expired?.status, 'expired')
        equal(expired?.pendingCheck, null)
        equal(await store.countPendingChecks('c'), 0)
        equal(await store.findTaskIdByTxHash(hex32(42)), null)
        same(await store.expireTasks(at(30), at(15), 100), { expired: 1, purged: 1 })
        equal(await store.getTask('sample-agent', early.id), null)
        equal((await store.getTask('sample-agent', late.id))?.status, 'expired')
        equal((await store.getTask('sample-agent', paid.id))?.status, 'paid')
        equal(await store.markTaskPaid(late.id, samplePayment(43, { at: at(19) }), []), 'not_pending')
      }),
    )

    test(
      'behavior: payments without a tx hash or escrow task id (free tasks) claim nothing',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent(), [])
        const free = () =>
          sampleTask({
            status: 'paid',
            priceBaseUnits: 0n,
            payTo: null,
            payment: samplePayment(0, { method: 'free', txHash: null, amountBaseUnits: 0n, from: null }),
          })
        const [one, two] = [free(), free()]
        same(await store.insertTask(one, []), { outcome: 'inserted' })
        same(await store.insertTask(two, []), { outcome: 'inserted' })
        same(await store.getTask('sample-agent', two.id), two)
        const pending = sampleTask()
        await store.insertTask(pending, [])
        equal(await store.markTaskPaid(pending.id, samplePayment(5, { txHash: null }), []), 'paid')
        equal((await store.listTasks('sample-agent', allTasks)).total, 3)
      }),
    )

    test(
      'behavior: markTaskPaid pays a pending task once, storing the payment, clearing the check, adding events',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent(), [])
        const task = sampleTask({
          pendingCheck: { txHash: hex32(1), signature: null, attempts: 1, nextAt: at(1) },
        })
        await store.insertTask(task, [taskEvent('task.created', task)])
        const payment = samplePayment(1, { escrowTaskId: hex32(1, 0xe), amountBaseUnits: 2n ** 70n })
        equal(await store.markTaskPaid(task.id, payment, [taskEvent('task.paid', task)]), 'paid')
        same(await store.getTask('sample-agent', task.id), {
          ...task,
          status: 'paid',
          payment,
          pendingCheck: null,
        })
        equal(await store.findTaskIdByTxHash(hex32(1)), task.id)
        same(
          (await store.listEvents({ limit: 50 })).map((event) => event.kind),
          ['task.paid', 'task.created'],
        )
        equal(
          await store.markTaskPaid(task.id, samplePayment(2), [taskEvent('task.paid', task)]),
          'not_pending',
        )
        same((await store.getTask('sample-agent', task.id))?.payment, payment)
        equal(await store.findTaskIdByTxHash(hex32(2)), null)
        equal(
          await store.markTaskPaid('task_unknown', samplePayment(3), [taskEvent('task.paid', task)]),
          'not_pending',
        )
        equal((await store.listEvents({ limit: 50 })).length, 2)
      }),
    )

    test(
      'error: markTaskPaid with a tx hash or escrow task id another task holds leaves the task pending',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent(), [])
        const holder = paidTask(1, { payment: samplePayment(1, { escrowTaskId: hex32(1, 0xe) }) })
        const task = sampleTask({
          pendingCheck: { txHash: hex32(1), signature: null, attempts: 0, nextAt: at(1) },
        })
        await store.insertTask(holder, [])
        await store.insertTask(task, [])
        equal(
          await store.markTaskPaid(task.id, samplePayment(1), [taskEvent('task.paid', task)]),
          'tx_already_used',
        )
        same(await store.getTask('sample-agent', task.id), task)
        equal(
          await store.markTaskPaid(
            task.id,
            samplePayment(2, { method: 'escrow', escrowTaskId: hex32(1, 0xe) }),
            [taskEvent('task.paid', task)],
          ),
          'escrow_task_id_used',
        )
        same(await store.getTask('sample-agent', task.id), task)
        equal(await store.findTaskIdByTxHash(hex32(1)), holder.id)
        equal(await store.findTaskIdByTxHash(hex32(2)), null)
        same(await store.listEvents({ limit: 50 }), [])
        equal(await store.markTaskPaid(task.id, samplePayment(3), [taskEvent('task.paid', task)]), 'paid')
      }),
    )

    test(
      'behavior: racing markTaskPaid calls pay a task once and spend a hash once',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent(), [])
        const task = sampleTask()
        await store.insertTask(task, [])
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            store.markTaskPaid(task.id, samplePayment(100 + i), [taskEvent('task.paid', task)]),
          ),
        )
        equal(results.filter((result) => result === 'paid').length, 1)
        equal(results.filter((result) => result === 'not_pending').length, 9)
        const winner = results.indexOf('paid')
        equal((await store.getTask('sample-agent', task.id))?.payment?.txHash, hex32(100 + winner))
        equal((await store.listEvents({ limit: 50 })).filter((event) => event.kind === 'task.paid').length, 1)

        const tasks = Array.from({ length: 10 }, () => sampleTask())
        for (const each of tasks) await store.insertTask(each, [])
        const spent = await Promise.all(
          tasks.map((each) => store.markTaskPaid(each.id, samplePayment(7), [taskEvent('task.paid', each)])),
        )
        equal(spent.filter((result) => result === 'paid').length, 1)
        equal(spent.filter((result) => result === 'tx_already_used').length, 9)
        const payer = tasks[spent.indexOf('paid')]
        equal(await store.findTaskIdByTxHash(hex32(7)), payer?.id)
        equal((await store.listTasks('sample-agent', { ...allTasks, statuses: ['paid'] })).total, 2)
        equal((await store.listEvents({ limit: 50 })).filter((event) => event.kind === 'task.paid').length, 2)
      }),
    )

    test(
      'behavior: an Idempotency-Key is unique per agent; a repeat (even with the same tx hash) replays the first answer',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent({ name: 'Idem' }), [])
        await store.insertAgent(sampleAgent({ name: 'other' }), [])
        const first = sampleTask({
          agentName: 'Idem',
          idempotency: idempotencyOf('k-1', { task_id: 'first', payment: { amount: 0.01 } }),
        })
        const retry = sampleTask({
          agentName: 'Idem',
          idempotency: idempotencyOf('k-1', { task_id: 'retry' }),
        })
        same(await store.insertTask(first, [taskEvent('task.created', first)]), { outcome: 'inserted' })
        same(await store.insertTask(retry, [taskEvent('task.created', retry)]), {
          outcome: 'replay',
          answer: first.idempotency,
        })
        equal(await store.getTask('Idem', retry.id), null)
        equal((await store.listEvents({ limit: 50 })).length, 1)
        same(await store.findIdempotentAnswer('IDEM', '', 'k-1'), first.idempotency)
        same(await store.findIdempotentAnswer('idem', '', 'k-1'), first.idempotency)
        equal(await store.findIdempotentAnswer('idem', '', 'K-1'), null)
        equal(await store.findIdempotentAnswer('other', '', 'k-1'), null)

        const elsewhere = sampleTask({
          agentName: 'other',
          idempotency: idempotencyOf('k-1', { other: true }),
        })
        same(await store.insertTask(elsewhere, []), { outcome: 'inserted' })
        same(await store.findIdempotentAnswer('other', '', 'k-1'), elsewhere.idempotency)
        same(await store.findIdempotentAnswer('Idem', '', 'k-1'), first.idempotency)

        const racers = Array.from({ length: 5 }, (_, i) =>
          sampleTask({ agentName: 'Idem', idempotency: idempotencyOf('k-race', { racer: i }) }),
        )
        const results = await Promise.all(
          racers.map((task) => store.insertTask(task, [taskEvent('task.created', task)])),
        )
        equal(results.filter((result) => result.outcome === 'inserted').length, 1)
        const winner = racers[results.findIndex((result) => result.outcome === 'inserted')]
        same(
          results.filter((result) => result.outcome === 'replay'),
          Array.from({ length: 4 }, () => ({ outcome: 'replay', answer: winner?.idempotency })),
        )
        equal((await store.listTasks('idem', allTasks)).total, 2)
        equal((await store.listEvents({ limit: 50 })).length, 2)

        const paidFirst = paidTask(9, { agentName: 'Idem', idempotency: idempotencyOf('k-paid') })
        const paidRetry = paidTask(9, {
          agentName: 'Idem',
          idempotency: idempotencyOf('k-paid', { retry: 1 }),
        })
        same(await store.insertTask(paidFirst, []), { outcome: 'inserted' })
        same(await store.insertTask(paidRetry, []), { outcome: 'replay', answer: paidFirst.idempotency })
      }),
    )

    test(
      'behavior: completeTask completes a paid task once, counting it on its agent',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent({ lastActiveAt: at(0) }), [])
        const task = sampleTask()
        await store.insertTask(task, [])
        const done = [taskEvent('task.completed', task)]
        equal(await store.completeTask(task.id, 'https://example.com/r', at(40), done), 'not_paid')
        same(await store.getTask('sample-agent', task.id), task)
        equal(await store.completeTask('task_unknown', 'https://example.com/r', at(40), done), 'not_paid')
        same(await store.listEvents({ limit: 50 }), [])

        const payment = samplePayment(1)
        await store.markTaskPaid(task.id, payment, [])
        equal(await store.completeTask(task.id, 'https://example.com/r', at(40), done), 'completed')
        same(await store.getTask('SAMPLE-AGENT', task.id), {
          ...task,
          status: 'completed',
          payment,
          resultUrl: 'https://example.com/r',
          completedAt: at(40),
        })
        const agent = await store.getAgent('sample-agent')
        equal(agent?.completedTasks, 1)
        same(agent?.lastActiveAt, at(40))

        equal(await store.completeTask(task.id, 'https://example.com/again', at(50), done), 'not_paid')
        equal((await store.getTask('sample-agent', task.id))?.resultUrl, 'https://example.com/r')
        equal((await store.getAgent('sample-agent'))?.completedTasks, 1)
        same((await store.getAgent('sample-agent'))?.lastActiveAt, at(40))
        same(
          (await store.listEvents({ limit: 50 })).map((event) => event.kind),
          ['task.completed'],
        )
      }),
    )

    /** A task of 'sample-agent' paid by `payment` through markTaskPaid, then completed. */
    const deliver = async (store: Store, payment: TaskPayment): Promise<TaskRecord> => {
      const task = sampleTask()
      await store.insertTask(task, [])
      equal(await store.markTaskPaid(task.id, payment, []), 'paid')
      equal(await store.completeTask(task.id, 'https://example.com/r', at(40), []), 'completed')
      return task
    }
    const trustOf = async (store: Store) => {
      const agent = await store.getAgent('sample-agent')
      return { credit: agent?.trustCreditBaseUnits, buyers: agent?.payingBuyers }
    }
    const BUYER_A: Address = '0x00000000000000000000000000000000000000a1'
    const BUYER_B: Address = '0x00000000000000000000000000000000000000B2'
    const USDC = 1_000_000n
    const inCapitals = (address: Address): Address => `0x${address.slice(2).toUpperCase()}`

    test(
      "behavior: completing a task paid on chain credits its buyer wallet once; the seller's own and its owner's wallets, free tasks and MPP charges credit nothing",
      withStore(async (store) => {
        const sellerWallet: Address = '0x00000000000000000000000000000000000000c3'
        await store.insertAgent(sampleAgent({ walletAddress: sellerWallet, pairingCodeHash: 'code' }), [])
        const owner = sampleUser({ walletAddress: '0x00000000000000000000000000000000000000d4' })
        await store.claimAgent(claimOf('code', owner, 'sample-agent'))
        let n = 0
        const paidBy = (from: Address | null, amount: bigint, method: TaskPayment['method'] = 'transfer') =>
          samplePayment(++n, { from, amountBaseUnits: amount, method })

        const first = await deliver(store, paidBy(BUYER_A, 3n * USDC))
        same(await trustOf(store), { credit: 3n * USDC, buyers: 1 })
        equal(await store.completeTask(first.id, 'https://example.com/again', at(41), []), 'not_paid')
        await deliver(store, paidBy(BUYER_B, 4n * USDC, 'escrow'))
        same(await trustOf(store), { credit: 7n * USDC, buyers: 2 })

        // The wallet the task paid, the seller's current wallet, the owner's (any case): the seller paying itself.
        await deliver(store, paidBy(inCapitals('0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'), 5n * USDC))
        await deliver(store, paidBy(sellerWallet, 5n * USDC))
        await deliver(store, paidBy(inCapitals(owner.walletAddress), 5n * USDC))
        await deliver(store, paidBy('0x00000000000000000000000000000000000000e5', 5n * USDC, 'mpp'))
        await deliver(store, paidBy(null, 5n * USDC))
        const free = paidTask(++n, {
          payment: samplePayment(n, { method: 'free', txHash: null, from: null }),
        })
        await store.insertTask(free, [])
        equal(await store.completeTask(free.id, 'https://example.com/r', at(40), []), 'completed')
        same(await trustOf(store), { credit: 7n * USDC, buyers: 2 })
        equal((await store.getAgent('sample-agent'))?.completedTasks, 8)

        const unpaid = sampleTask()
        await store.insertTask(unpaid, [])
        equal(await store.completeTask(unpaid.id, 'https://example.com/r', at(40), []), 'not_paid')
        await deliver(store, paidBy(BUYER_A, 1n * USDC))
        same(await trustOf(store), { credit: 8n * USDC, buyers: 2 })
      }),
    )

    test(
      'behavior: one buyer wallet counts at most 10 USDC toward an agent, whatever it pays and in any letter case',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent(), [])
        await deliver(store, samplePayment(1, { from: BUYER_A, amountBaseUnits: 6n * USDC }))
        await deliver(store, samplePayment(2, { from: inCapitals(BUYER_A), amountBaseUnits: 6n * USDC }))
        same(await trustOf(store), { credit: 10n * USDC, buyers: 1 })
        await deliver(store, samplePayment(3, { from: BUYER_A, amountBaseUnits: 1n }))
        await deliver(store, samplePayment(4, { from: BUYER_B, amountBaseUnits: 2n ** 70n }))
        same(await trustOf(store), { credit: 20n * USDC, buyers: 2 })
      }),
    )

    test(
      'behavior: racing completions credit each delivered task once, and each buyer up to its cap',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent(), [])
        const buyers: Address[] = [BUYER_A, BUYER_B, '0x00000000000000000000000000000000000000f6']
        const tasks = Array.from({ length: 6 }, () => sampleTask())
        for (const [i, task] of tasks.entries()) {
          await store.insertTask(task, [])
          const payment = samplePayment(i + 1, { from: buyers[i % 3] ?? null, amountBaseUnits: 4n * USDC })
          await store.markTaskPaid(task.id, payment, [])
        }
        const outcomes = await Promise.all(
          [...tasks, ...tasks].map((task, i) =>
            store.completeTask(task.id, `https://example.com/${i}`, at(40), []),
          ),
        )
        equal(outcomes.filter((outcome) => outcome === 'completed').length, 6)
        same(await trustOf(store), { credit: 24n * USDC, buyers: 3 })
        equal((await store.getAgent('sample-agent'))?.completedTasks, 6)
      }),
    )

    test(
      'behavior: an agent task list filters by status with a total, in history or work-queue order, paged',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent({ name: 'Lister' }), [])
        await store.insertAgent(sampleAgent({ name: 'other' }), [])
        const task = (id: string, overrides: Partial<TaskRecord>) =>
          sampleTask({ id, agentName: 'Lister', ...overrides })
        const paid = (n: number, paidAt: number) =>
          ({ status: 'paid', payment: samplePayment(n, { at: at(paidAt) }) }) as const
        const list = [
          task('task_p1', { createdAt: at(1) }),
          task('task_p2', { createdAt: at(5) }),
          task('task_paidA', { createdAt: at(2), ...paid(1, 10) }),
          task('task_paidB', { createdAt: at(3), ...paid(2, 20) }),
          task('task_c1', { createdAt: at(4), ...paid(3, 11), status: 'completed', completedAt: at(30) }),
          task('task_c2', { createdAt: at(0), ...paid(4, 12), status: 'completed', completedAt: at(31) }),
          sampleTask({ id: 'task_other', agentName: 'other', createdAt: at(6) }),
        ]
        for (const each of list) await store.insertTask(each, [])
        const ids = async (query: Partial<typeof allTasks>) => {
          const page = await store.listTasks('lister', { ...allTasks, ...query })
          return { ids: page.tasks.map((each) => each.id), total: page.total }
        }
        same(await ids({ order: 'history' }), {
          ids: ['task_p2', 'task_c1', 'task_paidB', 'task_paidA', 'task_p1', 'task_c2'],
          total: 6,
        })
        same(await ids({ order: 'work_queue' }), {
          ids: ['task_paidA', 'task_paidB', 'task_p2', 'task_p1', 'task_c1', 'task_c2'],
          total: 6,
        })
        same(await ids({ statuses: ['paid'] }), { ids: ['task_paidA', 'task_paidB'], total: 2 })
        same(await ids({ statuses: ['pending_payment', 'completed'], order: 'history' }), {
          ids: ['task_p2', 'task_c1', 'task_p1', 'task_c2'],
          total: 4,
        })
        same(await ids({ limit: 2, offset: 1 }), { ids: ['task_paidB', 'task_p2'], total: 6 })
        same(await ids({ order: 'history', limit: 3, offset: 4 }), { ids: ['task_p1', 'task_c2'], total: 6 })
        same(await ids({ offset: 10 }), { ids: [], total: 6 })
        same((await store.listTasks('LISTER', allTasks)).tasks[0], list[2])
        same(await store.listTasks('other', { ...allTasks, statuses: ['paid'] }), { tasks: [], total: 0 })
        same(await store.listTasks('nobody', allTasks), { tasks: [], total: 0 })
        same(await ids({ statuses: [] }), { ids: [], total: 0 })
      }),
    )

    test(
      'behavior: due rechecks are unpaid tasks whose check is due, soonest first; paying a task drops it',
      withStore(async (store) => {
        await store.insertAgent(sampleAgent(), [])
        await store.insertAgent(sampleAgent({ name: 'other' }), [])
        const check = (minute: number, n = minute): PendingCheck => ({
          txHash: hex32(n, 0xc),
          signature: null,
          attempts: minute,
          nextAt: at(minute),
        })
        const soon = sampleTask({ id: 'task_soon', pendingCheck: check(1) })
        const due = sampleTask({ id: 'task_due', agentName: 'other', pendingCheck: check(3) })
        const now = sampleTask({ id: 'task_now', pendingCheck: check(5) })
        const later = sampleTask({ id: 'task_later', pendingCheck: check(10) })
        const unchecked = sampleTask({ id: 'task_unchecked' })
        const stalePaid = paidTask(1, { id: 'task_stale', pendingCheck: check(0) })
        for (const task of [later, due, stalePaid, now, unchecked, soon]) await store.insertTask(task, [])
        const dueIds = async (minute: number, limit = 10) =>
          (await store.listDueRechecks(at(minute), limit)).map((task) => task.id)

        same(await store.listDueRechecks(at(5), 10), [soon, due, now])
        same(await dueIds(5, 2), ['task_soon', 'task_due'])
        same(await dueIds(0), [])

        await store.setPendingCheck('task_unchecked', check(2, 42))
        same((await store.getTask('sample-agent', 'task_unchecked'))?.pendingCheck, check(2, 42))
        same(await dueIds(5), ['task_soon', 'task_unchecked', 'task_due', 'task_now'])
        await store.setPendingCheck('task_soon', null)
        equal((await store.getTask('sample-agent', 'task_soon'))?.pendingCheck, null)
        same(await dueIds(5), ['task_unchecked', 'task_due', 'task_now'])
        await store.setPendingCheck('task_soon', check(4))
        same(await dueIds(5), ['task_unchecked', 'task_due', 'task_soon', 'task_now'])

        const paid = paidTask(2)
        await store.insertTask(paid, [])
        await store.setPendingCheck(paid.id, check(1, 43))
        same(await store.getTask('sample-agent', paid.id), paid)
        await store.setPendingCheck('task_unknown', check(1, 44))
        same(await dueIds(5), ['task_unchecked', 'task_due', 'task_soon', 'task_now'])

        equal(await store.markTaskPaid('task_due', samplePayment(3), []), 'paid')
        equal((await store.getTask('other', 'task_due'))?.pendingCheck, null)
        same(await dueIds(60), ['task_unchecked', 'task_soon', 'task_now', 'task_later'])
      }),
    )

    test(
      'behavior: key-value entries are written, read, removed, and updated atomically',
      withStore(async (store) => {
        equal(await store.kvGet('missing'), null)
        await store.kvPut('setting', { secret: 'abc', n: 1 })
        same(await store.kvGet('setting'), { secret: 'abc', n: 1 })
        await store.kvPut('setting', 'replaced')
        equal(await store.kvGet('setting'), 'replaced')
        await store.kvDelete('setting')
        equal(await store.kvGet('setting'), null)
        const kept = await store.kvUpdate('once', (current) =>
          current === null ? { op: 'set', value: 'first', result: 'wrote' } : { op: 'noop', result: 'kept' },
        )
        equal(kept, 'wrote')
        equal(await store.kvUpdate('once', () => ({ op: 'delete', result: 'gone' })), 'gone')
        equal(await store.kvGet('once'), null)
        await store.kvPut('counter', 0)
        const claims = await Promise.all(
          Array.from({ length: 10 }, () =>
            store.kvUpdate('counter', (current) => ({ op: 'set', value: Number(current) + 1, result: true })),
          ),
        )
        equal(claims.length, 10)
        equal(await store.kvGet('counter'), 10)
        await store.insertAgent(sampleAgent(), [])
        ok(await store.getAgent('sample-agent'), 'the store keeps its data after atomic updates')
      }),
    )

    test(
      'behavior: ping resolves on a working store',
      withStore(async (store) => {
        await store.ping()
      }),
    )

    test(
      'behavior: changeVersion, where the store has it, moves after every write that public reads show, not after reads',
      withStore(async (store) => {
        const version = () => store.changeVersion?.() ?? Promise.resolve('unsupported')
        if ((await version()) === 'unsupported') return
        const seen = new Set([await version()])
        const moved = async (what: string) => {
          const now = await version()
          ok(!seen.has(now), `changeVersion did not move after ${what}`)
          seen.add(now)
        }
        await store.insertAgent(sampleAgent({ name: 'versioned' }), [])
        await moved('insertAgent')
        await store.getAgent('versioned')
        await store.listAgents({ limit: 10, offset: 0 })
        equal(await version(), [...seen].at(-1), 'a read moved changeVersion')
        await store.recordHeartbeat('versioned', at(1), {
          event: {
            kind: 'agent.online',
            agent: 'versioned',
            at: at(1),
            summary: 'versioned is live',
            data: {},
          },
          notSeenSince: at(-5),
        })
        await moved('recordHeartbeat')
        await store.insertMilestone(sampleMilestone({ agentName: 'versioned' }), [])
        await moved('insertMilestone')
      }),
    )

    mailStoreCases(test, withStore)
  })
}
