import { strictEqual as equal } from 'node:assert/strict'
import type { Address } from 'viem'
import type { AgentRecord } from '../Agent.ts'
import { jobSteps } from '../actions/tasks/jobSteps.ts'
import type { Store } from '../ports/Store.ts'
import type { TaskRecord } from '../Task.ts'
import { type CreditCounts, PAID_TRUST_STEPS, STANDING_AGE_MS, trustScore } from '../Trust.ts'
import { complete, hex32, sampleAgent, samplePayment, sampleSkill, sampleTask, T0 } from './fixtures.ts'

/** One USDC in base units. */
export const USDC = 1_000_000n
/** A day in milliseconds. */
export const DAY_MS = 24 * 60 * 60 * 1000

/** A wallet address numbered `n`, of kind `tag` (a hex digit): distinct for each pair. */
export const simWallet = (tag: number, n: number): Address =>
  `0x${tag.toString(16)}${n.toString(16).padStart(39, '0')}`

/**
 * A market played on a real store for the trust tables (SECURITY.md "Trust score"): sellers with a full self-made
 * profile (30 points at `now`), payments credited as a delivered task's are, ratings by the wallets that paid.
 */
export function trustMarket(store: Store) {
  let payments = 0
  let clock = T0.getTime()
  const now = () => new Date(clock)

  return {
    now,
    /** Moves the market's time on by `days`. */
    advanceDays(days: number) {
      clock += days * DAY_MS
    },
    /** A seller `name` paid at its own wallet, with every self-made point (a fresh owner of its own). */
    async seller(name: string, wallet: Address, overrides: Partial<AgentRecord> = {}) {
      const agent = sampleAgent({
        name,
        bio: 'sells things',
        skills: [sampleSkill({ name: 'Thing', slug: 'thing', type: 'purchasable', priceBaseUnits: USDC })],
        walletAddress: wallet,
        ownerUsername: `${name}-owner`,
        ownerProven: true,
        verifiedMilestones: 5,
        apiKeyHash: `hash-of-${name}`,
        ...overrides,
      })
      await store.insertAgent(agent, [])
      return agent
    },
    /** `buyer` pays `seller` `amount` on chain for a task the seller then delivers at once: the task. */
    async pay(buyer: Address, seller: AgentRecord, amount: bigint): Promise<TaskRecord> {
      payments += 1
      const task = sampleTask({ agentName: seller.name, payTo: seller.walletAddress, priceBaseUnits: amount })
      await store.insertTask(task, [])
      const payment = samplePayment(payments, { from: buyer, amountBaseUnits: amount, at: now() })
      equal(await store.markTaskPaid(task.id, { ...payment, txHash: hex32(payments, 0xc) }, []), 'paid')
      equal(await complete(store, task.id, 'https://example.com/r', now()), 'completed')
      return task
    },
    /**
     * `buyer` funds a job of `seller` for `amount` that the seller lets pass its deadline: the sweep's lateness step
     * (expired, late), the buyer owed all of it back (the job escrow refunds it for gas): the task.
     */
    async late(buyer: Address, seller: AgentRecord, amount: bigint): Promise<TaskRecord> {
      payments += 1
      const task = sampleTask({
        agentName: seller.name,
        payTo: seller.walletAddress,
        priceBaseUnits: amount,
        slaSeconds: 60,
      })
      await store.insertTask(task, [])
      const payment = samplePayment(payments, { from: buyer, amountBaseUnits: amount, at: now() })
      equal(await store.markTaskPaid(task.id, { ...payment, txHash: hex32(payments, 0xc) }, []), 'paid')
      const paid = (await store.getTask(seller.name, task.id)) as TaskRecord
      equal(await store.changeTask(jobSteps.lateness(paid, new Date(clock + 61_000), [])), true)
      return paid
    },
    /** `buyer` rates its `task` `score` stars. */
    async rate(task: TaskRecord, buyer: Address, score: number) {
      const rating = { score, comment: '', wallet: buyer, at: now() }
      equal(await store.rateTask(task.id, rating, []), true)
    },
    /** The trust score of `name` now, its heartbeat fresh. */
    async trust(name: string): Promise<number> {
      const agent = await store.getAgent(name)
      if (!agent) throw new Error(`no agent ${name}`)
      return trustScore({ ...agent, lastSeen: now() }, now())
    },
  }
}

/** A trust market, as trustMarket makes it. */
export type TrustMarket = ReturnType<typeof trustMarket>

/**
 * `count` buyer wallets (tag `tag`) made established: each pays 10 USDC to one of `others` (sellers unconnected to
 * the ones they will pay), then a month passes. Returns the wallets.
 */
export async function establishedBuyers(
  market: TrustMarket,
  others: AgentRecord[],
  tag: number,
  count: number,
): Promise<Address[]> {
  const wallets = Array.from({ length: count }, (_, index) => simWallet(tag, index + 1))
  for (const [index, wallet] of wallets.entries())
    await market.pay(wallet, others[index % others.length] as AgentRecord, 10n * USDC)
  market.advanceDays(STANDING_AGE_MS / DAY_MS + 1)
  return wallets
}

/**
 * Credit counters on both sides of every step of the paid curve (Trust.ts PAID_TRUST_STEPS), from established buyers
 * only, newcomers only, both, and newcomers past one buyer's cap: for checking a store's form of countedPaidTrust.
 */
export function creditCountsAtSteps(): CreditCounts[] {
  const credits = [0n, ...PAID_TRUST_STEPS].flatMap((step) => (step > 0n ? [step - 1n, step] : [step]))
  return credits.flatMap((credit) => [
    ...[1, 3, 7].map((buyers) => ({
      trustCreditBaseUnits: credit,
      establishedCreditBaseUnits: credit,
      establishedBuyers: credit > 0n ? buyers : 0,
    })),
    { trustCreditBaseUnits: credit, establishedCreditBaseUnits: 0n, establishedBuyers: 0 },
    {
      trustCreditBaseUnits: credit,
      establishedCreditBaseUnits: credit / 2n,
      establishedBuyers: credit > 1n ? 2 : 0,
    },
    {
      trustCreditBaseUnits: credit + 25n * USDC,
      establishedCreditBaseUnits: credit,
      establishedBuyers: credit > 0n ? 5 : 0,
    },
  ])
}
