import { strictEqual as equal, ok, deepStrictEqual as same } from 'node:assert/strict'
import {
  at,
  BUYER_A,
  BUYER_B,
  deliver,
  inCapitals,
  online,
  type StoreTest,
  sampleAgent,
  sampleEvent,
  sampleMilestone,
  samplePayment,
  sampleSkill,
  T0,
  trustOf,
  USDC,
  type WithStore,
} from './fixtures.ts'

/** The conformance cases of the AgentStore: agents, skills, milestones, liveness, listings and the read version. */
export function agentStoreCases(test: StoreTest, withStore: WithStore): void {
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
            input: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
            priceBaseUnits: 10_000n,
            currency: 'USDC',
            sla: '5s',
            slaSeconds: 5,
            reviewSeconds: 3600,
            reveal: 'after_acceptance',
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
    "behavior: an order's skill reads back by its slug with the seller's name as registered, wallet and listing",
    withStore(async (store) => {
      const search = sampleSkill({
        name: 'Search',
        slug: 'search',
        description: 'web search',
        type: 'purchasable',
        input: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
        priceBaseUnits: 999_999_999_999_999n,
        sla: '5s',
        slaSeconds: 5,
        reviewSeconds: 3600,
        reveal: 'after_acceptance',
        url: 'https://example.com/search',
      })
      const wallet = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
      const agent = sampleAgent({ name: 'Seller_1', walletAddress: wallet, skills: [sampleSkill(), search] })
      await store.insertAgent(agent, [])
      const seller = { name: 'Seller_1', walletAddress: wallet }
      same(await store.getSellerSkill('SELLER_1', 'search'), { seller, skill: search })
      same(await store.getSellerSkill('seller_1', 'ping'), { seller, skill: sampleSkill() })
      // By slug only: a skill's name, another case of its slug, or no such agent or skill is null.
      for (const [name, slug] of [
        ['seller_1', 'Search'],
        ['seller_1', 'SEARCH'],
        ['seller_1', 'nothing'],
        ['nobody', 'search'],
      ] as const)
        equal(await store.getSellerSkill(name, slug), null)
      await store.updateAgent('seller_1', { walletAddress: null, listing: 'deleted' }, at(1), [])
      same(await store.getSellerSkill('seller_1', 'ping'), {
        seller: { name: 'Seller_1', walletAddress: null, listing: 'deleted' },
        skill: sampleSkill(),
      })
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
          store.insertAgent(sampleAgent({ name: 'race', apiKeyHash: `k${i}`, pairingCodeHash: `p${i}` }), []),
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
    'behavior: a key rotation is a compare-and-set on the old hash: of racing rotations exactly one wins',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent({ name: 'Rotor', apiKeyHash: 'k0' }), [])
      const outcomes = await Promise.all(
        ['k1', 'k2', 'k3', 'k4'].map((next) => store.rotateApiKey('rotor', 'k0', next)),
      )
      equal(outcomes.filter(Boolean).length, 1)
      const winner = ['k1', 'k2', 'k3', 'k4'][outcomes.indexOf(true)]
      equal((await store.getAgent('ROTOR'))?.apiKeyHash, winner)
      equal(await store.findAgentNameByKeyHash('k0'), null)
      equal(await store.findAgentNameByKeyHash(winner ?? ''), 'Rotor')
      equal(await store.rotateApiKey('rotor', 'k0', 'k5'), false)
      equal(await store.rotateApiKey('nobody', 'k0', 'k6'), false)
      equal((await store.getAgent('rotor'))?.apiKeyHash, winner)
    }),
  )

  test(
    "behavior: a heartbeat sent with a key hash is recorded only while that is the agent's key, its event too",
    withStore(async (store) => {
      await store.insertAgent(sampleAgent({ name: 'keyedbeat', apiKeyHash: 'old' }), [])
      equal(await store.rotateApiKey('keyedbeat', 'old', 'new'), true)
      const [stale, fresh] = await Promise.all([
        store.recordHeartbeat('keyedbeat', at(7), online('keyedbeat', 7), 'old'),
        store.recordHeartbeat('KEYEDBEAT', at(6), online('keyedbeat', 6), 'new'),
      ])
      same([stale, fresh], [false, true])
      same((await store.getAgent('keyedbeat'))?.lastSeen, at(6))
      equal(
        (await store.listEvents({ limit: 10 })).filter((event) => event.kind === 'agent.online').length,
        1,
      )
      equal(await store.recordHeartbeat('keyedbeat', at(8), online('keyedbeat', 8), 'old'), false)
      same((await store.getAgent('keyedbeat'))?.lastSeen, at(6))
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
      // A field present but undefined is left as it is, not cleared.
      const kept = await store.updateAgent('upd', { bio: 'again', model: undefined }, at(12), [])
      equal(kept?.model, 'm')
      equal(kept?.bio, 'again')
      equal(await store.updateAgent('missing', { bio: 'x' }, at(1), []), null)
      // Nothing of an update of a missing agent lands: not its events either.
      const ghostEvent = sampleEvent({ kind: 'agent.updated', agent: 'missing', at: at(2) })
      equal(await store.updateAgent('missing', { bio: 'x' }, at(2), [ghostEvent]), null)
      equal((await store.listEvents({ limit: 50 })).filter((event) => event.agent === 'missing').length, 0)
    }),
  )

  test(
    "behavior: an update sent with a key hash lands only while it is the agent's key, and answers the agent as written",
    withStore(async (store) => {
      await store.insertAgent(
        sampleAgent({ name: 'keyedupd', apiKeyHash: 'current', skills: [sampleSkill({ name: 'Echo' })] }),
        [],
      )
      const event = sampleEvent({ kind: 'agent.updated', agent: 'keyedupd', at: at(3) })
      // A key rotated away (by another process, say) stops the update: nothing of it lands, its events neither.
      equal(await store.updateAgent('keyedupd', { bio: 'stale key' }, at(3), [event], 'rotated-away'), null)
      equal((await store.getAgent('keyedupd'))?.revision, 1)
      equal((await store.listEvents({ limit: 50 })).filter((e) => e.agent === 'keyedupd').length, 0)
      await store.recordHeartbeat('keyedupd', at(4), online('keyedupd', 4))
      const updated = await store.updateAgent('KEYEDUPD', { bio: 'right key' }, at(5), [event], 'current')
      ok(updated)
      // The record as this write left it: the heartbeat before it, the revision it made, the skills it kept.
      same(updated, await store.getAgent('keyedupd'))
      equal(updated.bio, 'right key')
      equal(updated.revision, 2)
      same(updated.lastSeen, at(4))
      same(
        updated.skills.map((skill) => skill.name),
        ['Echo'],
      )
      const replaced = await store.updateAgent('keyedupd', { skills: [] }, at(6), [], 'current')
      same(replaced?.skills, [])
      equal(replaced?.revision, 3)
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
      same(
        (await store.listMilestones('miles', 2, 1)).map((milestone) => milestone.id),
        ['m3', 'm1'],
      )
      same(await store.listMilestones('miles', 2, 3), [])
      const agent = await store.getAgent('miles')
      equal(agent?.verifiedMilestones, 1)
      equal(agent?.claimedMilestones, 2)
      same(agent?.lastActiveAt, at(2))
    }),
  )

  test(
    "behavior: a milestone sent with a key hash lands only while it is the agent's key; refused, nothing of it lands",
    withStore(async (store) => {
      await store.insertAgent(
        sampleAgent({ name: 'keyedms', apiKeyHash: 'current', lastActiveAt: at(0) }),
        [],
      )
      await store.insertAgent(sampleAgent({ name: 'bystander', apiKeyHash: 'theirs' }), [])
      const event = (id: string) =>
        sampleEvent({ kind: 'milestone.recorded', agent: 'keyedms', data: { id } })
      const refused = [
        // A key rotated away (by another process, say), or another agent's key, or a write for no such agent.
        ['keyedms', 'rotated-away'],
        ['keyedms', 'theirs'],
        ['nobody', 'current'],
      ] as const
      for (const [agentName, hash] of refused) {
        const milestone = sampleMilestone({
          id: `no-${hash}`,
          agentName,
          trust: 'verified',
          createdAt: at(5),
        })
        equal(await store.insertMilestone(milestone, [event(milestone.id)], hash), false)
      }
      const untouched = await store.getAgent('keyedms')
      equal(untouched?.verifiedMilestones, 0)
      equal(untouched?.claimedMilestones, 0)
      same(untouched?.lastActiveAt, at(0))
      same(await store.listMilestones('keyedms', 10), [])
      same(await store.listMilestones('nobody', 10), [])
      equal((await store.listEvents({ limit: 50 })).filter((e) => e.kind === 'milestone.recorded').length, 0)
      const landed = sampleMilestone({ id: 'yes', agentName: 'keyedms', createdAt: at(6) })
      equal(await store.insertMilestone(landed, [event('yes')], 'current'), true)
      same(
        (await store.listMilestones('KEYEDMS', 10)).map((milestone) => milestone.id),
        ['yes'],
      )
      equal((await store.getAgent('keyedms'))?.claimedMilestones, 1)
      same(
        (await store.listEvents({ limit: 50 }))
          .filter((e) => e.kind === 'milestone.recorded')
          .map((e) => e.data),
        [{ id: 'yes' }],
      )
      // Without a key hash (a host's own write) only the agent must exist.
      equal(await store.insertMilestone(sampleMilestone({ agentName: 'nobody' }), []), false)
      equal(await store.insertMilestone(sampleMilestone({ agentName: 'keyedms' }), []), true)
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
        input: null,
      })
      same(
        (await store.listPaidOffers({ agentKey: 'amy', slug: 'x' }, 1)).map((offer) => offer.slug),
        ['a'],
      )
      same(await store.listPaidOffers({ agentKey: 'zed', slug: 'b' }, 5), [])
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
    'behavior: ping resolves on a working store',
    withStore(async (store) => {
      await store.ping()
    }),
  )
}
