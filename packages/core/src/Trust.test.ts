import { describe, expect, test } from 'bun:test'
import type { AgentRecord } from './Agent.ts'
import {
  cappedCredit,
  countedPaidTrust,
  creditedBuyer,
  isEstablished,
  PAID_TRUST_STEPS,
  paidTrust,
  SELF_MADE_CEILING,
  STANDING_AGE_MS,
  trustScore,
  voteWeight,
  weightedVote,
} from './Trust.ts'
import { sampleAgent, sampleSkill, sampleTask } from './testing/storeSuite.ts'

const now = new Date('2026-06-01T12:00:00.000Z')
const minutesAgo = (minutes: number) => new Date(now.getTime() - minutes * 60_000)
const skill = [sampleSkill()]
const WALLET = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
const USDC = 1_000_000n

/** Everything an agent can do alone, as much as it likes. */
const loneBest: Partial<AgentRecord> = {
  bio: 'b',
  skills: skill,
  walletAddress: WALLET,
  ownerUsername: 'self',
  ownerProven: true,
  verifiedMilestones: 500,
  claimedMilestones: 500,
  completedTasks: 10_000,
  lastSeen: now,
}

describe('trustScore', () => {
  test('behavior: a bare registration scores 5', () => {
    expect(trustScore(sampleAgent(), now)).toBe(5)
  })

  test('behavior: each self-made term adds its points', () => {
    expect(trustScore(sampleAgent({ bio: 'b', skills: skill }), now)).toBe(10)
    expect(trustScore(sampleAgent({ bio: 'b' }), now)).toBe(5)
    expect(trustScore(sampleAgent({ walletAddress: WALLET }), now)).toBe(10)
    expect(trustScore(sampleAgent({ ownerUsername: 'ann', ownerProven: true }), now)).toBe(10)
    expect(trustScore(sampleAgent({ verifiedMilestones: 2, claimedMilestones: 1 }), now)).toBe(8)
    expect(trustScore(sampleAgent({ lastSeen: minutesAgo(5) }), now)).toBe(10)
    expect(trustScore(sampleAgent({ lastSeen: minutesAgo(6) }), now)).toBe(7)
    expect(trustScore(sampleAgent({ lastSeen: minutesAgo(31) }), now)).toBe(5)
  })

  test('behavior: an owner who never proved the wallet, delivered free tasks and milestones past 5 add nothing', () => {
    expect(trustScore(sampleAgent({ ownerUsername: 'ann', ownerProven: false }), now)).toBe(5)
    expect(trustScore(sampleAgent({ completedTasks: 1_000 }), now)).toBe(5)
    expect(trustScore(sampleAgent({ verifiedMilestones: 50 }), now)).toBe(10)
    expect(trustScore(sampleAgent({ claimedMilestones: 50 }), now)).toBe(10)
  })

  test('behavior: a lone agent tops out at the self-made ceiling of 30', () => {
    expect(SELF_MADE_CEILING).toBe(30)
    expect(trustScore(sampleAgent(loneBest), now)).toBe(30)
  })

  test('behavior: paid credit follows 70 × (1 − 2^(−C / 20 USDC)), at most 10 per paying buyer', () => {
    expect(paidTrust(0n, 0)).toBe(0)
    expect(paidTrust(10n * USDC, 1)).toBe(10)
    expect(paidTrust(1n * USDC, 1)).toBe(2)
    expect(paidTrust(20n * USDC, 2)).toBe(20)
    expect(paidTrust(20n * USDC, 10)).toBe(35)
    expect(paidTrust(40n * USDC, 4)).toBe(40)
    expect(paidTrust(60n * USDC, 6)).toBe(60)
    expect(paidTrust(60n * USDC, 7)).toBe(61)
    expect(paidTrust(150n * USDC, 15)).toBe(70)
    expect(paidTrust(10n ** 30n, 1_000_000)).toBe(70)
  })

  test('behavior: one buyer, however much it pays, gives at most 10 points', () => {
    expect(paidTrust(10_000n * USDC, 1)).toBe(10)
    expect(
      trustScore(sampleAgent({ ...loneBest, trustCreditBaseUnits: 10_000n * USDC, payingBuyers: 1 }), now),
    ).toBe(40)
  })

  test('behavior: monotonic in credit and in buyers, and 0 to 100 everywhere', () => {
    let previous = -1
    for (let usdc = 0n; usdc <= 400n; usdc += 1n) {
      const points = paidTrust(usdc * USDC, 40)
      expect(points).toBeGreaterThanOrEqual(previous)
      previous = points
    }
    for (let buyers = 1; buyers < 20; buyers++)
      expect(paidTrust(100n * USDC, buyers + 1)).toBeGreaterThanOrEqual(paidTrust(100n * USDC, buyers))
    const richest = sampleAgent({
      ...loneBest,
      trustCreditBaseUnits: 10n ** 20n,
      payingBuyers: 10 ** 9,
      establishedCreditBaseUnits: 10n ** 20n,
      establishedBuyers: 10 ** 9,
    })
    expect(trustScore(richest, now)).toBe(100)
    expect(trustScore(sampleAgent({ ...loneBest, lastSeen: null }), now)).toBe(25)
  })
})

describe('creditedBuyer and cappedCredit', () => {
  const BUYER = '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359'
  const paidBy = (from: `0x${string}` | null, method: 'transfer' | 'escrow' | 'mpp' | 'free' = 'transfer') =>
    sampleTask({
      status: 'paid',
      payTo: WALLET,
      payment: { method, txHash: null, escrowTaskId: null, amountBaseUnits: USDC, from, at: now },
    })

  test('behavior: credits the on-chain payer unless it is the wallet paid, the seller or its owner', () => {
    expect(creditedBuyer(paidBy(BUYER), [])).toBe(BUYER)
    expect(creditedBuyer(paidBy(BUYER, 'escrow'), [null])).toBe(BUYER)
    expect(creditedBuyer(paidBy(BUYER, 'mpp'), [])).toBeNull()
    expect(creditedBuyer(paidBy(BUYER, 'free'), [])).toBeNull()
    expect(creditedBuyer(paidBy(null), [])).toBeNull()
    expect(creditedBuyer(paidBy(WALLET.toLowerCase() as `0x${string}`), [])).toBeNull()
    expect(creditedBuyer(paidBy(BUYER), [BUYER.toUpperCase()])).toBeNull()
  })

  test('behavior: one buyer wallet is credited at most 10 USDC', () => {
    expect(cappedCredit(0n, 3n * USDC)).toBe(3n * USDC)
    expect(cappedCredit(8n * USDC, 3n * USDC)).toBe(10n * USDC)
    expect(cappedCredit(10n * USDC, 2n ** 70n)).toBe(10n * USDC)
  })
})

describe('isEstablished', () => {
  const monthAgo = new Date(now.getTime() - STANDING_AGE_MS)

  test('behavior: established from 10 USDC paid to unconnected sellers and a first payment 30 days old, both at least', () => {
    expect(isEstablished({ elsewhereBaseUnits: 10n * USDC, firstPaidAt: monthAgo }, now)).toBe(true)
    expect(isEstablished({ elsewhereBaseUnits: 500n * USDC, firstPaidAt: new Date(0) }, now)).toBe(true)
  })

  test('behavior: one base unit short of the history, one millisecond short of the age, or no payment yet is not', () => {
    expect(isEstablished({ elsewhereBaseUnits: 10n * USDC - 1n, firstPaidAt: monthAgo }, now)).toBe(false)
    const younger = new Date(monthAgo.getTime() + 1)
    expect(isEstablished({ elsewhereBaseUnits: 10n * USDC, firstPaidAt: younger }, now)).toBe(false)
    expect(isEstablished({ elsewhereBaseUnits: 10n * USDC, firstPaidAt: null }, now)).toBe(false)
  })

  test('behavior: judged at the instant given: the same history is established a month after its first payment', () => {
    const history = { elsewhereBaseUnits: 10n * USDC, firstPaidAt: now }
    expect(isEstablished(history, now)).toBe(false)
    expect(isEstablished(history, new Date(now.getTime() + STANDING_AGE_MS))).toBe(true)
  })
})

describe('countedPaidTrust', () => {
  const counts = (credit: bigint, established: bigint, buyers: number) => ({
    trustCreditBaseUnits: credit,
    establishedCreditBaseUnits: established,
    establishedBuyers: buyers,
  })

  test('behavior: credit from established buyers alone is the paid curve, at most 10 per buyer', () => {
    expect(countedPaidTrust(counts(0n, 0n, 0))).toBe(0)
    expect(countedPaidTrust(counts(40n * USDC, 40n * USDC, 4))).toBe(paidTrust(40n * USDC, 4))
    expect(countedPaidTrust(counts(40n * USDC, 40n * USDC, 4))).toBe(40)
    expect(countedPaidTrust(counts(40n * USDC, 40n * USDC, 9))).toBe(53)
  })

  test('behavior: every other wallet together is one buyer of at most 10 USDC, however many and however much', () => {
    expect(countedPaidTrust(counts(3n * USDC, 0n, 0))).toBe(paidTrust(3n * USDC, 1))
    expect(countedPaidTrust(counts(500n * USDC, 0n, 0))).toBe(10)
    expect(countedPaidTrust(counts(30n * USDC, 20n * USDC, 2))).toBe(paidTrust(30n * USDC, 3))
    expect(countedPaidTrust(counts(90n * USDC, 20n * USDC, 2))).toBe(paidTrust(30n * USDC, 3))
  })

  test('behavior: at each step of the curve it gains the point, one base unit below it not', () => {
    for (const [index, step] of PAID_TRUST_STEPS.entries()) {
      expect(countedPaidTrust(counts(step, step, 7))).toBe(index + 1)
      expect(countedPaidTrust(counts(step - 1n, step - 1n, 7))).toBe(index)
    }
  })
})

describe('voteWeight and weightedVote', () => {
  test('behavior: a vote weighs what its wallet paid in thousandths of 10 USDC, rounded down, at most 1000', () => {
    expect(voteWeight(0n)).toBe(0)
    expect(voteWeight(USDC / 100n - 1n)).toBe(0)
    expect(voteWeight(USDC / 100n)).toBe(1)
    expect(voteWeight(4n * USDC)).toBe(400)
    expect(voteWeight(10n * USDC)).toBe(1000)
    expect(voteWeight(2n ** 70n)).toBe(1000)
  })

  test('behavior: the vote (mean stars as (mean - 1) / 4) times that weight, in thousandths', () => {
    expect(weightedVote(1, 5, 10n * USDC)).toBe(1000)
    expect(weightedVote(1, 1, 10n * USDC)).toBe(0)
    expect(weightedVote(2, 6, 10n * USDC)).toBe(500)
    expect(weightedVote(1, 5, 4n * USDC)).toBe(400)
    expect(weightedVote(1, 5, USDC / 100n)).toBe(1)
  })
})
