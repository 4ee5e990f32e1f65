import { strictEqual as equal, ok, deepStrictEqual as same } from 'node:assert/strict'
import type { Address } from 'viem'
import type { AgentRecord } from '../Agent.ts'
import { AGENT_SORTS, type AgentOrder } from '../AgentSearch.ts'
import { IDLE_WINDOW_MS, LIVE_WINDOW_MS, lastSeenRange, livenessChangesAt } from '../Liveness.ts'
import type { AgentListQuery, Store } from '../ports/Store.ts'
import type { SkillRecord } from '../Skill.ts'
import { PAID_TRUST_STEPS, trustScore } from '../Trust.ts'
import { at, type StoreTest, sampleAgent, sampleSkill, T0, type WithStore } from './fixtures.ts'

const WALLET: Address = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'

/** A purchasable skill of that name at `price` base units. */
const paid = (name: string, price: bigint, extra: Partial<SkillRecord> = {}) =>
  sampleSkill({
    name,
    slug: name.toLowerCase().replaceAll(' ', '-'),
    type: 'purchasable',
    priceBaseUnits: price,
    ...extra,
  })

/** A free skill of that name. */
const free = (name: string, extra: Partial<SkillRecord> = {}) =>
  sampleSkill({ name, slug: name.toLowerCase().replaceAll(' ', '-'), ...extra })

/** Inserts agents (each its own key hashes). */
async function insertAll(store: Store, agents: Partial<AgentRecord>[]) {
  for (const overrides of agents) {
    const name = overrides.name ?? 'agent'
    const agent = sampleAgent({ apiKeyHash: `k-${name}`, pairingCodeHash: `p-${name}`, ...overrides })
    equal(await store.insertAgent(agent, []), 'inserted')
  }
}

/** The names a query lists, in order, on one page of up to 100. */
async function names(store: Store, query: Partial<AgentListQuery>): Promise<string[]> {
  const page = await store.listAgents({ limit: 100, offset: 0, ...query } as AgentListQuery)
  equal(page.total, page.agents.length, 'total counts what the filters keep')
  return page.agents.map((agent) => agent.name)
}

/** The conformance cases of the agent list: what `q` matches, each filter, each order and paging through them. */
export function agentListCases(test: StoreTest, withStore: WithStore): void {
  test(
    'behavior: syncAgents pages by name key after a key, since a time, withdrawn listings included; lists leave them out',
    withStore(async (store) => {
      await insertAll(store, [
        { name: 'Delta', updatedAt: at(5) },
        { name: 'alpha', updatedAt: at(1) },
        { name: 'charlie', updatedAt: at(9), listing: 'deleted' },
        { name: 'bravo', updatedAt: at(7), listing: 'deprecated', listingMessage: 'use delta' },
      ])
      const sync = async (after: string | null, since: Date | null, limit = 10) =>
        (await store.syncAgents({ after, since, limit })).map((agent) => agent.name)
      same(await sync(null, null), ['alpha', 'bravo', 'charlie', 'Delta'])
      same(await sync('bravo', null, 1), ['charlie'])
      same(await sync(null, at(5)), ['bravo', 'charlie', 'Delta'])
      same(await sync('charlie', at(5)), ['Delta'])
      const [bravo] = await store.syncAgents({ after: 'alpha', since: null, limit: 1 })
      equal(bravo?.listing, 'deprecated')
      equal(bravo?.listingMessage, 'use delta')
      same((await names(store, {})).sort(), ['Delta', 'alpha', 'bravo'])
      equal((await store.listAgents({ limit: 10, offset: 0 } as AgentListQuery)).total, 3)
    }),
  )

  test(
    "behavior: every filter's count leaves withdrawn listings out, as its page does",
    withStore(async (store) => {
      const now = T0
      const seen = (ms: number) => new Date(now.getTime() - ms)
      await insertAll(store, [
        { name: 'paid-kept', ownerUsername: 'Ann', skills: [paid('Maps', 10_000n)], lastSeen: now },
        {
          name: 'paid-gone',
          ownerUsername: 'Ann',
          skills: [paid('Maps', 10_000n)],
          lastSeen: now,
          listing: 'deleted',
        },
        {
          name: 'free-kept',
          bio: 'maps by hand',
          skills: [free('Maps')],
          lastSeen: seen(IDLE_WINDOW_MS + 1),
        },
        { name: 'free-gone', bio: 'maps by hand', skills: [free('Maps')], listing: 'deleted' },
        { name: 'old-kept', listing: 'deprecated', listingMessage: 'moved' },
      ])
      const counted = async (query: Partial<AgentListQuery>) => {
        const said = Object.keys(query).join(',')
        const page = await store.listAgents({ limit: 1, offset: 0, ...query } as AgentListQuery)
        const all = await names(store, query)
        equal(page.total, all.length, said)
        ok(!all.some((name) => name.endsWith('-gone')), said)
        return page.total
      }
      equal(await counted({}), 3)
      equal(await counted({ sells: 'paid' }), 1)
      equal(await counted({ sells: 'free' }), 1)
      equal(await counted({ maxPriceBaseUnits: 10_000n }), 1)
      equal(await counted({ owner: 'ann' }), 1)
      equal(await counted({ q: 'maps' }), 2)
      equal(await counted({ q: 'maps', sells: 'paid' }), 1)
      equal(await counted({ lastSeen: lastSeenRange('live', now) }), 1)
      equal(await counted({ lastSeen: lastSeenRange('off', now) }), 2)
    }),
  )

  test(
    'behavior: q finds skill names, slugs and descriptions as well as name and bio, long or short, any case',
    withStore(async (store) => {
      await insertAll(store, [
        { name: 'gdpr-bot', bio: 'Privacy work', skills: [paid('GDPR Data Map', 5_000_000n)] },
        { name: 'slugger', skills: [free('Quick Look', { slug: 'deep-scan' })] },
        { name: 'describer', skills: [free('Lookup', { description: 'Reads 100% of invoices' })] },
        { name: 'bio-only', bio: 'makes a data map by hand' },
        { name: 'two-skills', skills: [free('alpha'), free('beta')] },
      ])
      same(await names(store, { q: 'Data Map' }), ['bio-only', 'gdpr-bot'])
      same(await names(store, { q: 'DATA MAP' }), ['bio-only', 'gdpr-bot'])
      same(await names(store, { q: 'deep-scan' }), ['slugger'])
      same(await names(store, { q: '100%' }), ['describer'])
      same(await names(store, { q: 'GD' }), ['gdpr-bot'])
      same(await names(store, { q: '0%' }), ['describer'])
      // Each text is matched on its own: nothing spans the end of one skill and the start of the next.
      same(await names(store, { q: 'alphabeta' }), [])
      same(await names(store, { q: 'alpha beta' }), [])
    }),
  )

  test(
    'behavior: q folds ASCII letters only (as SQLite lower() does): any other letter matches itself, alone or with others',
    withStore(async (store) => {
      await insertAll(store, [
        { name: 'ecole', bio: 'École de cartes' },
        { name: 'kelvin', bio: 'Heat in \u212Aelvin' },
        { name: 'strasse', bio: 'STRASSE maps', skills: [free('Straße Atlas')] },
      ])
      same(await names(store, { q: 'École de' }), ['ecole'])
      same(await names(store, { q: 'éCOLE de' }), [])
      same(await names(store, { q: 'ÉCOLE DE' }), ['ecole'])
      same(await names(store, { q: 'cole DE car' }), ['ecole'])
      // U+212A KELVIN SIGN folds to "k" in Unicode, not in ASCII.
      same(await names(store, { q: 'kelvin' }), ['kelvin'])
      same(await names(store, { q: 'in kelvin' }), [])
      same(await names(store, { q: 'in \u212Aelvin' }), ['kelvin'])
      same(await names(store, { q: 'strasse' }), ['strasse'])
      same(await names(store, { q: 'straße atlas' }), ['strasse'])
      same(await names(store, { q: 'STRAßE' }), ['strasse'])
      same(await names(store, { q: 'STRASSE ATLAS' }), [])
      same(await names(store, { q: 'de', sort: 'new' }), ['ecole'])
    }),
  )

  test(
    'behavior: a renamed skill is found by its new name only, and a removed skill no longer finds its agent',
    withStore(async (store) => {
      await insertAll(store, [{ name: 'seller', skills: [free('Cartography'), free('Weather')] }])
      same(await names(store, { q: 'cartography' }), ['seller'])
      await store.updateAgent('seller', { skills: [free('Topography'), free('Weather')] }, at(1), [])
      same(await names(store, { q: 'cartography' }), [])
      same(await names(store, { q: 'topograph' }), ['seller'])
      await store.updateAgent('seller', { skills: [free('Weather')] }, at(2), [])
      same(await names(store, { q: 'topograph' }), [])
      same(await names(store, { q: 'weather' }), ['seller'])
      // An update that leaves the skills alone keeps them searchable.
      await store.updateAgent('seller', { bio: 'forecasts' }, at(3), [])
      same(await names(store, { q: 'weather' }), ['seller'])
      same(await names(store, { q: 'forecast' }), ['seller'])
    }),
  )

  test(
    'behavior: type keeps agents selling a free (or a purchasable) skill, max_price those with one at or under it',
    withStore(async (store) => {
      await insertAll(store, [
        {
          name: 'both',
          skills: [free('f'), paid('p', 2_000_000n), paid('q', 500_000n)],
          lastActiveAt: at(3),
        },
        { name: 'free-only', skills: [free('f')], lastActiveAt: at(2) },
        { name: 'paid-only', skills: [paid('p', 1_000_000n)], lastActiveAt: at(1) },
        { name: 'nothing', skills: [] },
      ])
      same(await names(store, { sells: 'free' }), ['both', 'free-only'])
      same(await names(store, { sells: 'paid' }), ['both', 'paid-only'])
      same(await names(store, { maxPriceBaseUnits: 500_000n }), ['both'])
      same(await names(store, { maxPriceBaseUnits: 499_999n }), [])
      same(await names(store, { maxPriceBaseUnits: 1_000_000n }), ['both', 'paid-only'])
      same(await names(store, { maxPriceBaseUnits: 0n }), [])
      same(await names(store, { sells: 'free', maxPriceBaseUnits: 10_000_000n }), ['both'])
      // A new price list moves the agent in and out of the filters.
      await store.updateAgent('free-only', { skills: [paid('p', 100n)] }, at(0), [])
      same(await names(store, { sells: 'free' }), ['both'])
      same(await names(store, { maxPriceBaseUnits: 100n }), ['free-only'])
    }),
  )

  test(
    'behavior: the liveness filter keeps agents by last heartbeat at the bounds: 5 minutes live, 30 idle, then off',
    withStore(async (store) => {
      const now = at(60)
      const ago = (ms: number) => new Date(now.getTime() - ms)
      await insertAll(store, [
        { name: 'ahead', lastSeen: new Date(now.getTime() + 1_000), lastActiveAt: at(9) },
        { name: 'just-now', lastSeen: now, lastActiveAt: at(8) },
        { name: 'live-edge', lastSeen: ago(LIVE_WINDOW_MS), lastActiveAt: at(7) },
        { name: 'idle-start', lastSeen: ago(LIVE_WINDOW_MS + 1), lastActiveAt: at(6) },
        { name: 'idle-edge', lastSeen: ago(IDLE_WINDOW_MS), lastActiveAt: at(5) },
        { name: 'off-start', lastSeen: ago(IDLE_WINDOW_MS + 1), lastActiveAt: at(4) },
        { name: 'never', lastSeen: null, lastActiveAt: at(3) },
      ])
      same(await names(store, { lastSeen: lastSeenRange('live', now) }), ['ahead', 'just-now', 'live-edge'])
      same(await names(store, { lastSeen: lastSeenRange('idle', now) }), ['idle-start', 'idle-edge'])
      same(await names(store, { lastSeen: lastSeenRange('off', now) }), ['off-start', 'never'])
    }),
  )

  test(
    'behavior: owner keeps the agents of that username in any case; filters combine with q',
    withStore(async (store) => {
      await insertAll(store, [
        { name: 'mine-1', ownerUsername: 'Ann', skills: [free('Maps')], lastActiveAt: at(2) },
        { name: 'mine-2', ownerUsername: 'Ann', lastActiveAt: at(1) },
        { name: 'theirs', ownerUsername: 'annabel', skills: [free('Maps')] },
        { name: 'nobodys' },
      ])
      same(await names(store, { owner: 'ann' }), ['mine-1', 'mine-2'])
      same(await names(store, { owner: 'ANN', q: 'maps' }), ['mine-1'])
      same(await names(store, { owner: 'bob' }), [])
    }),
  )

  test(
    'behavior: sort new is newest first, price cheapest first with agents selling nothing paid last',
    withStore(async (store) => {
      await insertAll(store, [
        {
          name: 'old-cheap',
          createdAt: at(1),
          lastActiveAt: at(1),
          skills: [paid('a', 100n), paid('b', 9n)],
        },
        { name: 'new-free', createdAt: at(5), lastActiveAt: at(2), skills: [free('f')] },
        { name: 'mid-dear', createdAt: at(3), lastActiveAt: at(3), skills: [paid('a', 5_000n)] },
        { name: 'tie-b', createdAt: at(3), lastActiveAt: at(4), skills: [paid('a', 9n)] },
        { name: 'tie-a', createdAt: at(3), lastActiveAt: at(4), skills: [paid('a', 9n)] },
        { name: 'empty', createdAt: at(0), lastActiveAt: at(9), skills: [] },
      ])
      same(await names(store, { sort: 'new' }), [
        'new-free',
        'mid-dear',
        'tie-a',
        'tie-b',
        'old-cheap',
        'empty',
      ])
      same(await names(store, { sort: 'price' }), [
        'tie-a',
        'tie-b',
        'old-cheap',
        'mid-dear',
        'empty',
        'new-free',
      ])
      same(await names(store, { sort: 'activity' }), [
        'empty',
        'tie-a',
        'tie-b',
        'mid-dear',
        'new-free',
        'old-cheap',
      ])
    }),
  )

  test(
    'behavior: sort trust ranks by the trust score at the time asked, every part of it, credit steps exactly',
    withStore(async (store) => {
      const now = at(100)
      const step = (points: number) => PAID_TRUST_STEPS[points - 1] ?? 0n
      /** Credit all from established buyers. */
      const credit = (baseUnits: bigint, buyers: number) => ({
        trustCreditBaseUnits: baseUnits,
        payingBuyers: buyers,
        establishedCreditBaseUnits: baseUnits,
        establishedBuyers: buyers,
      })
      const agents: Partial<AgentRecord>[] = [
        { name: 'bare' },
        { name: 'profile', bio: 'does things', skills: [free('x')] },
        { name: 'bio-no-skill', bio: 'does things' },
        { name: 'walleted', walletAddress: WALLET },
        { name: 'owned', ownerUsername: 'ann', ownerProven: true },
        { name: 'owned-unproven', ownerUsername: 'ann', ownerProven: false },
        { name: 'milestones', verifiedMilestones: 4, claimedMilestones: 4 },
        { name: 'live', lastSeen: new Date(now.getTime() - LIVE_WINDOW_MS) },
        { name: 'idle', lastSeen: new Date(now.getTime() - LIVE_WINDOW_MS - 1) },
        { name: 'at-step', ...credit(step(12), 5) },
        { name: 'below-step', ...credit(step(12) - 1n, 5) },
        { name: 'one-buyer', ...credit(step(40), 1) },
        { name: 'top', ...credit(step(70) + 123n, 9), walletAddress: WALLET },
        // Wallets without standing count together as one buyer of at most 10 USDC (countedPaidTrust).
        { name: 'newcomers', trustCreditBaseUnits: 50_000_000n, payingBuyers: 8 },
        {
          name: 'mixed',
          ...credit(step(20), 2),
          trustCreditBaseUnits: step(20) + 3_000_000n,
          payingBuyers: 4,
        },
        // Paid points kept by the record: late jobs and unhappy buyers' votes take some away (keptPaidTrust).
        { name: 'late', ...credit(step(40), 5), onTimeTasks: 3, lateTasks: 4 },
        { name: 'disliked', ...credit(step(60), 7), ratedBuyers: 3, ratingWeight: 2500, ratingVotes: 500 },
        { name: 'liked', ...credit(step(30), 4), ratedBuyers: 2, ratingWeight: 2000, ratingVotes: 2000 },
      ].map((agent, index) => ({ lastActiveAt: at(index % 3), ...agent }))
      await insertAll(store, agents)
      const records = await Promise.all(agents.map(async (agent) => store.getAgent(agent.name ?? '')))
      const expected = records
        .flatMap((record) => (record ? [record] : []))
        .sort(
          (a, b) =>
            trustScore(b, now) - trustScore(a, now) ||
            b.lastActiveAt.getTime() - a.lastActiveAt.getTime() ||
            (a.name < b.name ? -1 : 1),
        )
      ok(
        new Set(expected.map((agent) => trustScore(agent, now))).size >= 9,
        'the scores differ enough to rank',
      )
      same(
        await names(store, { sort: 'trust', now }),
        expected.map((agent) => agent.name),
      )
      // Later, the live agent is idle and the idle one off: the same agents rank otherwise.
      const later = new Date(now.getTime() + IDLE_WINDOW_MS)
      const rankedLater = await names(store, { sort: 'trust', now: later })
      ok(rankedLater.indexOf('live') > (await names(store, { sort: 'trust', now })).indexOf('live'))
    }),
  )

  test(
    'behavior: paging through any order, filtered or not, lists every agent once (ties broken by name)',
    withStore(async (store) => {
      const agents = Array.from({ length: 11 }, (_, index) => ({
        name: `pager-${String.fromCharCode(107 - index)}`,
        // Few distinct values: most rows tie on every key but the name.
        lastActiveAt: at(index % 2),
        createdAt: at(index % 3),
        lastSeen: index % 4 === 0 ? null : at(index % 2),
        skills: index % 5 === 0 ? [] : [paid('thing', BigInt(1 + (index % 2)))],
        bio: index % 3 === 0 ? 'has a thing' : null,
      }))
      await insertAll(store, agents)
      const orders: AgentOrder[] = AGENT_SORTS.map((sort) =>
        sort === 'trust' ? { sort, now: at(3) } : { sort },
      )
      for (const order of orders)
        for (const filters of [{}, { q: 'thing' }, { sells: 'paid' as const }]) {
          const whole = await names(store, { ...order, ...filters })
          const paged: string[] = []
          for (let offset = 0; offset < whole.length + 3; offset += 3) {
            const page = await store.listAgents({ ...order, ...filters, limit: 3, offset })
            equal(page.total, whole.length)
            paged.push(...page.agents.map((agent) => agent.name))
          }
          same(paged, whole, `${order.sort} ${JSON.stringify(filters)}`)
          equal(new Set(paged).size, paged.length)
        }
      equal((await names(store, {})).length, 11)
    }),
  )

  test(
    'behavior: nextLivenessChange is the first instant any agent turns idle or off (Infinity when none can)',
    withStore(async (store) => {
      const now = at(60)
      equal(await store.nextLivenessChange(now), Number.POSITIVE_INFINITY)
      await insertAll(store, [{ name: 'never' }, { name: 'long-gone', lastSeen: at(0) }])
      equal(await store.nextLivenessChange(now), Number.POSITIVE_INFINITY)
      const seen = [at(40), at(58), at(59)]
      await insertAll(
        store,
        seen.map((lastSeen, index) => ({ name: `seen-${index}`, lastSeen })),
      )
      const expected = Math.min(...seen.map((lastSeen) => livenessChangesAt(lastSeen, now)))
      equal(await store.nextLivenessChange(now), expected)
      equal(expected, at(58).getTime() + LIVE_WINDOW_MS + 1)
      // A heartbeat stamped ahead of this clock (another process's) changes at its own instant.
      await insertAll(store, [{ name: 'ahead', lastSeen: new Date(now.getTime() + 10) }])
      equal(await store.nextLivenessChange(now), now.getTime() + 10)
      equal(await store.nextLivenessChange(T0), at(5).getTime() + 1)
    }),
  )
}
