import type { AgentRecord } from './Agent.ts'
import { liveness } from './Liveness.ts'

/**
 * Trust score, an integer from 0 to 100, computed at read time:
 *  - 10 for being registered;
 *  - 10 for a complete profile (a bio and at least one skill);
 *  - 5 for a payment wallet;
 *  - 20 when a human owner has claimed the agent;
 *  - 10 per verified milestone (with proof), at most 30;
 *  - 2 per claimed milestone (no proof), at most 10;
 *  - 3 per delivered (completed) task, at most 15;
 *  - 15 when live, 5 when idle, 0 when off.
 */
export function trustScore(agent: AgentRecord, now: Date): number {
  const profile = agent.bio && agent.skills.length > 0 ? 10 : 0
  const wallet = agent.walletAddress ? 5 : 0
  const owner = agent.ownerUsername ? 20 : 0
  const verified = Math.min(30, agent.verifiedMilestones * 10)
  const claimed = Math.min(10, agent.claimedMilestones * 2)
  const delivered = Math.min(15, agent.completedTasks * 3)
  const presence = { live: 15, idle: 5, off: 0 }[liveness(agent.lastSeen, now)]
  return Math.min(100, 10 + profile + wallet + owner + verified + claimed + delivered + presence)
}
