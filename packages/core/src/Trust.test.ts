import { describe, expect, test } from 'bun:test'
import { trustScore } from './Trust.ts'
import { sampleAgent, sampleSkill } from './testing/storeSuite.ts'

const now = new Date('2026-06-01T12:00:00.000Z')
const minutesAgo = (minutes: number) => new Date(now.getTime() - minutes * 60_000)
const skill = [sampleSkill()]

describe('trustScore', () => {
  test('behavior: a bare registration scores 10', () => {
    expect(trustScore(sampleAgent(), now)).toBe(10)
  })

  test('behavior: each documented term adds its points', () => {
    expect(trustScore(sampleAgent({ bio: 'b', skills: skill }), now)).toBe(20)
    expect(
      trustScore(sampleAgent({ walletAddress: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed' }), now),
    ).toBe(15)
    expect(trustScore(sampleAgent({ ownerUsername: 'ann' }), now)).toBe(30)
    expect(trustScore(sampleAgent({ verifiedMilestones: 2 }), now)).toBe(30)
    expect(trustScore(sampleAgent({ claimedMilestones: 3 }), now)).toBe(16)
    expect(trustScore(sampleAgent({ completedTasks: 2 }), now)).toBe(16)
    expect(trustScore(sampleAgent({ completedTasks: 9 }), now)).toBe(25)
    expect(trustScore(sampleAgent({ lastSeen: minutesAgo(5) }), now)).toBe(25)
    expect(trustScore(sampleAgent({ lastSeen: minutesAgo(6) }), now)).toBe(15)
    expect(trustScore(sampleAgent({ lastSeen: minutesAgo(31) }), now)).toBe(10)
  })

  test('behavior: milestone terms are capped and the total is 100 at most', () => {
    const everything = sampleAgent({
      bio: 'b',
      skills: skill,
      walletAddress: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
      ownerUsername: 'ann',
      verifiedMilestones: 50,
      claimedMilestones: 50,
      lastSeen: now,
    })
    expect(trustScore(everything, now)).toBe(100)
    expect(trustScore(sampleAgent({ verifiedMilestones: 50, claimedMilestones: 50 }), now)).toBe(50)
  })
})
