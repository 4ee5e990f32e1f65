import { strictEqual as equal, ok } from 'node:assert/strict'
import type { AgentRecord } from '../Agent.ts'
import type { StoreTest, WithStore } from './fixtures.ts'
import { establishedBuyers, simWallet, trustMarket, USDC } from './trustSimulation.ts'

/**
 * The trust score against self-dealing and sabotage (SECURITY.md "Trust score" holds its table to these): rings of
 * 8 and 50 wallets, and rivals' 1-star votes, played on the store.
 */
/** Rings make a hundred payments (three transactions each): a generous limit for a busy PostgreSQL, not a bound. */
const RING_TIME_LIMIT_MS = 120_000

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
}
