import { strictEqual as equal, ok, deepStrictEqual as same } from 'node:assert/strict'
import type { AgentRecord } from '../Agent.ts'
import type { AgentListQuery, Store } from '../ports/Store.ts'
import { PAID_CEILING, PAID_TRUST_STEPS, trustScore } from '../Trust.ts'
import { type StoreTest, sampleAgent, sampleSkill, type WithStore } from './fixtures.ts'
import { establishedBuyers, simWallet, type TrustMarket, trustMarket, USDC } from './trustSimulation.ts'

/** The self-made points of a market seller and of a probe without a heartbeat: all but presence. */
const NO_PRESENCE = 25

/**
 * Probe agents of every trust score from 25 to 95 (`probe-<score>`): a seller's profile without a heartbeat, and paid
 * points from established credit exactly at a step of the curve. Never active, so each ranks after a seller it ties.
 */
async function insertProbes(store: Store, now: Date) {
  for (let paid = 0; paid <= PAID_CEILING; paid++) {
    const credit = PAID_TRUST_STEPS[paid - 1] ?? 0n
    const probe = sampleAgent({
      name: `probe-${NO_PRESENCE + paid}`,
      bio: 'probes the order',
      skills: [sampleSkill({ name: 'Thing', slug: 'thing' })],
      walletAddress: simWallet(0x9, paid + 1),
      ownerUsername: 'probe-owner',
      ownerProven: true,
      verifiedMilestones: 5,
      lastActiveAt: new Date(0),
      trustCreditBaseUnits: credit,
      payingBuyers: 7,
      establishedCreditBaseUnits: credit,
      establishedBuyers: 7,
    })
    equal(trustScore(probe, now), NO_PRESENCE + paid)
    await store.insertAgent(probe, [])
  }
}

/**
 * The trust score the store's list sorts each of `names` by at `now`, read from where it falls among the probes: the
 * score of the first probe after it (ties rank it first). The probes must come in their own order.
 */
async function sortedTrust(store: Store, names: string[], now: Date): Promise<Map<string, number | null>> {
  const page = await store.listAgents({ sort: 'trust', now, limit: 100, offset: 0 } as AgentListQuery)
  const listed = page.agents.map((agent) => agent.name)
  const probes = listed.filter((name) => name.startsWith('probe-'))
  same(
    probes,
    Array.from({ length: PAID_CEILING + 1 }, (_, index) => `probe-${NO_PRESENCE + PAID_CEILING - index}`),
  )
  const scoreAfter = (name: string) => {
    const next = listed.slice(listed.indexOf(name)).find((other) => other.startsWith('probe-'))
    return next ? Number(next.slice('probe-'.length)) : null
  }
  return new Map(names.map((name) => [name, scoreAfter(name)]))
}

/** Asserts that the list sorts each of `names` by its trustScore at the market's time. */
async function sortsByTrustScore(store: Store, market: TrustMarket, names: string[]) {
  const sorted = await sortedTrust(store, names, market.now())
  for (const name of names) {
    const record = (await store.getAgent(name)) as AgentRecord
    equal(sorted.get(name), trustScore(record, market.now()), `${name}: sorted by trust as trustScore says`)
  }
}

/**
 * The trust score against self-dealing and sabotage (SECURITY.md "Trust score" holds its table to these): rings of
 * 8 and 50 wallets, and rivals' 1-star votes, played on the store.
 */
/** Rings make a hundred payments (three transactions each): a generous limit for a busy PostgreSQL, not a bound. */
const RING_TIME_LIMIT_MS = 120_000

/** The trust cases of the conformance suite: rings, sabotage and vote weights, on the store `withStore` makes. */
export function trustCases(test: StoreTest, withStore: WithStore): void {
  for (const size of [8, 50])
    test(
      `attack: a ring of ${size} fresh wallets paying an agent 10 USDC each, also through the actor's other agent, counts as one buyer (30 -> 40)`,
      withStore(async (store) => {
        const market = trustMarket(store)
        const target = await market.seller('target', simWallet(0xa, 1))
        const helper = await market.seller('helper', simWallet(0xa, 2))
        equal(await market.trust('target'), 30)
        const ring = Array.from({ length: size }, (_, index) => simWallet(0xb, index + 1))
        for (const wallet of ring) await market.pay(wallet, helper, 10n * USDC)
        for (const wallet of ring) await market.pay(wallet, target, 10n * USDC)
        equal(await market.trust('target'), 40)
        // Today's formula gave 30 + 70: every wallet a buyer worth 10 points.
        const agent = (await store.getAgent('target')) as AgentRecord
        equal(agent.payingBuyers, size)
        equal(agent.establishedBuyers, 0)
      }),
      RING_TIME_LIMIT_MS,
    )

  for (const size of [8, 50])
    test(
      `attack: a ring of ${size} wallets that waits the month and recycles 10 USDC through the actor's other agent is credited as established buyers`,
      withStore(async (store) => {
        const market = trustMarket(store)
        const target = await market.seller('target', simWallet(0xa, 1))
        const helper = await market.seller('helper', simWallet(0xa, 2))
        const ring = await establishedBuyers(market, [helper], 0xb, size)
        for (const wallet of ring) await market.pay(wallet, target, 10n * USDC)
        equal(await market.trust('target'), size >= 15 ? 100 : 96)
      }),
      RING_TIME_LIMIT_MS,
    )

  test(
    'attack: a ring of 8 agents whose wallets pay each other at once earns each of them one buyer (30 -> 40)',
    withStore(async (store) => {
      const market = trustMarket(store)
      const wallets = Array.from({ length: 8 }, (_, index) => simWallet(0xd, index + 1))
      const agents = await Promise.all(wallets.map((wallet, index) => market.seller(`ring-${index}`, wallet)))
      for (const [index, wallet] of wallets.entries())
        for (const [other, agent] of agents.entries())
          if (other !== index) await market.pay(wallet, agent, 10n * USDC)
      for (const agent of agents) equal(await market.trust(agent.name), 40)
    }),
    RING_TIME_LIMIT_MS,
  )

  test(
    "attack: eight rival wallets buying the victim's 0.01 USDC skill and rating it 1 star move its trust by at most 1 (it was 75 -> 46)",
    withStore(async (store) => {
      const market = trustMarket(store)
      const victim = await market.seller('victim', simWallet(0xa, 1))
      const elsewhere = await market.seller('elsewhere', simWallet(0xa, 2))
      const honest = await establishedBuyers(market, [elsewhere], 0xc, 7)
      for (const wallet of honest) await market.pay(wallet, victim, 10n * USDC)
      const before = await market.trust('victim')
      equal(before, 94)
      for (let index = 1; index <= 8; index++) {
        const rival = simWallet(0xe, index)
        const task = await market.pay(rival, victim, USDC / 100n)
        await market.rate(task, rival, 1)
      }
      const after = await market.trust('victim')
      ok(Math.abs(before - after) <= 1, `trust moved ${before} -> ${after}`)
      const agent = (await store.getAgent('victim')) as AgentRecord
      // Eight votes of 0.01 USDC weigh 8 thousandths of one vote.
      equal(agent.ratingWeight, 8)
      equal(agent.ratedBuyers, 8)
    }),
  )

  for (const [size, before] of [
    [8, 64],
    [50, 40],
  ] as const)
    test(
      `attack: ${size} fresh wallets fund the victim's jobs and let them expire (refunded: gas only): together one buyer, its trust moves by 6 at most (94 -> 88; it was 94 -> ${before})`,
      withStore(async (store) => {
        const market = trustMarket(store)
        const victim = await market.seller('victim', simWallet(0xa, 1))
        const elsewhere = await market.seller('elsewhere', simWallet(0xa, 2))
        const honest = await establishedBuyers(market, [elsewhere], 0xc, 7)
        for (const wallet of honest) await market.pay(wallet, victim, 10n * USDC)
        equal(await market.trust('victim'), 94)
        for (let index = 1; index <= size; index++) await market.late(simWallet(0xe, index), victim, USDC)
        equal(await market.trust('victim'), 88)
        const agent = (await store.getAgent('victim')) as AgentRecord
        // The public record stays the raw count: every job missed is shown.
        equal(agent.lateTasks, size)
        equal(agent.reliabilityWeight, 8000)
      }),
      RING_TIME_LIMIT_MS,
    )

  test(
    "attack: an established buyer's late job counts as that buyer, and the seller's own 50 fresh wallets paying on time dilute its late jobs as one buyer (74 -> 77; it was 74 -> 92)",
    withStore(async (store) => {
      const market = trustMarket(store)
      const slow = await market.seller('slow', simWallet(0xa, 1))
      const elsewhere = await market.seller('elsewhere', simWallet(0xa, 2))
      const honest = await establishedBuyers(market, [elsewhere], 0xc, 11)
      for (const wallet of honest.slice(0, 7)) await market.pay(wallet, slow, 10n * USDC)
      for (const wallet of honest.slice(7)) await market.late(wallet, slow, 10n * USDC)
      // Four established buyers of eleven missed: reliability (2 + 7) / (2 + 11) of 64 paid points.
      equal(await market.trust('slow'), 74)
      for (let index = 1; index <= 50; index++) await market.pay(simWallet(0xf, index), slow, USDC)
      equal(await market.trust('slow'), 77)
      const agent = (await store.getAgent('slow')) as AgentRecord
      equal(agent.onTimeTasks, 57)
      equal(agent.reliabilityWeight, 12000)
    }),
    RING_TIME_LIMIT_MS,
  )

  test(
    'behavior: a vote weighs what its wallet paid the agent, up to 10 USDC; payments to the agent or its owner are no history',
    withStore(async (store) => {
      const market = trustMarket(store)
      const agent = await market.seller('agent', simWallet(0xa, 1))
      // A sibling under the same owner, and another agent paid at the same wallet: connected, so no history.
      const sibling = await market.seller('sibling', simWallet(0xa, 2), { ownerUsername: 'agent-owner' })
      const twin = await market.seller('twin', simWallet(0xa, 1), { ownerUsername: 'twin-owner' })
      const buyer = simWallet(0xf, 1)
      await market.pay(buyer, sibling, 10n * USDC)
      await market.pay(buyer, twin, 10n * USDC)
      market.advanceDays(31)
      const task = await market.pay(buyer, agent, 4n * USDC)
      await market.rate(task, buyer, 5)
      const record = (await store.getAgent('agent')) as AgentRecord
      equal(record.establishedBuyers, 0)
      equal(record.ratingWeight, 400)
      equal(record.ratingVotes, 400)
    }),
  )

  test(
    'behavior: the list sorts by the trustScore of each record after every write that moves it: fresh and established buyers, a buyer established later, ratings, late jobs',
    withStore(async (store) => {
      const market = trustMarket(store)
      await insertProbes(store, market.now())
      const fresh = await market.seller('fresh', simWallet(0xa, 1))
      const steady = await market.seller('steady', simWallet(0xa, 2))
      const mixed = await market.seller('mixed', simWallet(0xa, 3))
      const bloom = await market.seller('bloom', simWallet(0xa, 4))
      const elsewhere = await market.seller('elsewhere', simWallet(0xa, 5))
      const sellers = ['fresh', 'steady', 'mixed', 'bloom', 'elsewhere']
      // A wallet with history elsewhere but no age yet: bloom's newcomer until it pays again a month later.
      const late = simWallet(0xc, 1)
      await market.pay(late, elsewhere, 10n * USDC)
      await market.pay(late, bloom, 2n * USDC)
      for (const index of [1, 2, 3]) await market.pay(simWallet(0xb, index), fresh, USDC)
      await sortsByTrustScore(store, market, sellers)
      const established = await establishedBuyers(market, [elsewhere], 0xd, 4)
      // A month on, nothing was paid: the counted credit has not moved, nor the order.
      await sortsByTrustScore(store, market, sellers)
      for (const wallet of established) await market.pay(wallet, steady, 10n * USDC)
      for (const wallet of established.slice(0, 2)) await market.pay(wallet, mixed, 10n * USDC)
      await market.pay(simWallet(0xb, 9), mixed, 3n * USDC)
      const before = (await store.getAgent('bloom')) as AgentRecord
      await market.pay(late, bloom, 2n * USDC)
      const after = (await store.getAgent('bloom')) as AgentRecord
      equal(after.establishedBuyers, before.establishedBuyers + 1, 'the later payment made it established')
      await sortsByTrustScore(store, market, sellers)
      const task = await market.pay(established[0] as `0x${string}`, steady, USDC)
      await market.rate(task, established[0] as `0x${string}`, 1)
      await sortsByTrustScore(store, market, sellers)
      // Jobs missed: by a fresh wallet (with the others, one buyer), by an established buyer (one of its own).
      await market.late(simWallet(0xb, 1), fresh, USDC)
      await market.late(established[1] as `0x${string}`, steady, USDC)
      await market.late(established[2] as `0x${string}`, mixed, USDC)
      await sortsByTrustScore(store, market, sellers)
      const scores = await Promise.all(sellers.map((name) => market.trust(name)))
      ok(new Set(scores).size >= 4, `the sellers' scores differ: ${scores.join(', ')}`)
    }),
    RING_TIME_LIMIT_MS,
  )
}
