import { describe, expect, test } from 'bun:test'
import type { AgentRecord } from './Agent.ts'
import { cappedCredit, creditedBuyer, paidTrust, SELF_MADE_CEILING, trustScore } from './Trust.ts'
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
