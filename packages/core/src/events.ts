import type { AgentRecord } from './Agent.ts'
import type { FeedEventInput } from './Feed.ts'
import type { TaskOutcome } from './Job.ts'
import type { MilestoneRecord } from './Milestone.ts'
import { amountToNumber } from './Money.ts'
import type { SkillRecord } from './Skill.ts'
import type { TaskRecord } from './Task.ts'

/** The public part of a task in feed events: never its id (which grants read access), params, buyer or result. */
function publicTask(task: TaskRecord) {
  return { skill: task.skillName, amount: amountToNumber(task.priceBaseUnits), currency: 'USDC' }
}

/** Builders of feed events. Each carries only public fields: never keys, codes, e-mails, params or user wallets. */
export const feedEvents = {
  registered(agent: AgentRecord): FeedEventInput {
    return {
      kind: 'agent.registered',
      at: agent.createdAt,
      agent: agent.name,
      summary: `${agent.name} joined the marketplace`,
      data: { platform: agent.platform },
    }
  },
  updated(agentName: string, fields: string[], at: Date): FeedEventInput {
    return {
      kind: 'agent.updated',
      at,
      agent: agentName,
      summary: `${agentName} updated ${fields.join(', ')}`,
      data: { fields },
    }
  },
  skillPublished(agentName: string, skill: SkillRecord, at: Date): FeedEventInput {
    const price = skill.priceBaseUnits === null ? null : amountToNumber(skill.priceBaseUnits)
    const priced = price === null ? 'free' : `${price} USDC`
    return {
      kind: 'skill.published',
      at,
      agent: agentName,
      summary: `${agentName} published ${skill.name} (${priced})`,
      data: {
        skill: { name: skill.name, slug: skill.slug, type: skill.type, price, currency: skill.currency },
      },
    }
  },
  claimed(agentName: string, username: string, at: Date): FeedEventInput {
    return {
      kind: 'agent.claimed',
      at,
      agent: agentName,
      summary: `${username} claimed ${agentName}`,
      data: { owner: username },
    }
  },
  milestone(milestone: MilestoneRecord): FeedEventInput {
    const { agentName, id, title, date, trust, createdAt } = milestone
    return {
      kind: 'milestone.recorded',
      at: createdAt,
      agent: agentName,
      summary: `${agentName} reached "${title}" (${trust})`,
      data: { milestone: { id, title, date, trust } },
    }
  },
  online(agentName: string, at: Date): FeedEventInput {
    return { kind: 'agent.online', at, agent: agentName, summary: `${agentName} is live`, data: {} }
  },
  taskCreated(task: TaskRecord): FeedEventInput {
    return {
      kind: 'task.created',
      at: task.createdAt,
      agent: task.agentName,
      taskId: task.id,
      summary: `${task.agentName} received an order for ${task.skillName}`,
      data: { task: { ...publicTask(task), status: task.status } },
    }
  },
  taskPaid(task: TaskRecord, txHash: string | null, at: Date): FeedEventInput {
    return {
      kind: 'task.paid',
      at,
      agent: task.agentName,
      taskId: task.id,
      summary: `An order for ${task.agentName}'s ${task.skillName} was paid`,
      data: { task: { ...publicTask(task), tx_hash: txHash } },
    }
  },
  taskCompleted(task: TaskRecord, at: Date, outcome: TaskOutcome): FeedEventInput {
    const how = outcome === 'delivered' ? 'delivered' : `completed (${outcome.replaceAll('_', ' ')})`
    return {
      kind: 'task.completed',
      at,
      agent: task.agentName,
      taskId: task.id,
      summary: `${task.agentName} ${how} ${task.skillName}`,
      data: { task: { ...publicTask(task), outcome } },
    }
  },
  taskDelivered(task: TaskRecord, at: Date): FeedEventInput {
    return {
      kind: 'task.delivered',
      at,
      agent: task.agentName,
      taskId: task.id,
      summary: `${task.agentName} delivered ${task.skillName}, awaiting the buyer's review`,
      data: { task: publicTask(task) },
    }
  },
  taskRejected(task: TaskRecord, at: Date): FeedEventInput {
    return {
      kind: 'task.rejected',
      at,
      agent: task.agentName,
      taskId: task.id,
      summary: `A buyer rejected ${task.agentName}'s delivery of ${task.skillName}`,
      data: { task: publicTask(task) },
    }
  },
  taskLate(task: TaskRecord, at: Date): FeedEventInput {
    return {
      kind: 'task.late',
      at,
      agent: task.agentName,
      taskId: task.id,
      summary: `${task.agentName} did not deliver ${task.skillName} by its deadline`,
      data: { task: publicTask(task) },
    }
  },
  taskRated(task: TaskRecord, score: number, at: Date): FeedEventInput {
    return {
      kind: 'task.rated',
      at,
      agent: task.agentName,
      taskId: task.id,
      summary: `A buyer rated ${task.agentName}'s ${task.skillName} ${score} of 5`,
      data: { task: publicTask(task), score },
    }
  },
  taskRefunded(task: TaskRecord, at: Date, amount: bigint, txHash: string | null): FeedEventInput {
    return {
      kind: 'task.refunded',
      at,
      agent: task.agentName,
      taskId: task.id,
      summary: `${task.agentName}'s order for ${task.skillName} was refunded`,
      data: { task: { ...publicTask(task), refunded: amountToNumber(amount), tx_hash: txHash } },
    }
  },
}

/** The skills in `next` whose slugs `previous` did not have. */
export function newSkills(previous: readonly SkillRecord[], next: readonly SkillRecord[]): SkillRecord[] {
  const known = new Set(previous.map((skill) => skill.slug))
  return next.filter((skill) => !known.has(skill.slug))
}
