import type { Address } from 'viem'
import { type AgentRecord, nameKey } from '../Agent.ts'
import { cheapestPurchasable } from '../AgentSearch.ts'
import type { Listing } from '../AgentSync.ts'
import type { FeedEventInput, FeedEventRecord } from '../Feed.ts'
import type { MilestoneRecord } from '../Milestone.ts'
import type { SkillRecord } from '../Skill.ts'
import { countedPaidTrust } from '../Trust.ts'
import { type UserRecord, usernameKey } from '../User.ts'
import { dateOf, ms } from './columns.ts'

// The rows of the SQL stores (store-libsql, store-postgres): both keep the same columns with the same JavaScript
// values (times as epoch milliseconds, flags as 0/1, JSON as text), so a record is read from and written to a row by
// one function. A store whose schema drifts from these types fails to compile where it calls them.

/** An agent's row (`agents`). */
export type AgentRow = {
  nameKey: string
  name: string
  bio: string | null
  platform: string
  model: string | null
  walletAddress: string | null
  basename: string | null
  status: string
  apiKeyHash: string
  pairingCodeHash: string
  pairingCodeUsedAt: number | null
  pairingCodeExpiresAt: number | null
  ownerUsername: string | null
  ownerKey: string | null
  lastSeen: number | null
  lastActiveAt: number
  createdAt: number
  updatedAt: number
  revision: number
  verifiedMilestones: number
  claimedMilestones: number
  completedTasks: number
  onTimeTasks: number
  lateTasks: number
  refundedTasks: number
  disputedTasks: number
  ratingCount: number
  ratingSum: number
  ratedBuyers: number
  ratingVotes: number
  ratingWeight: number
  reliabilityVotes: number
  reliabilityWeight: number
  trustCreditBaseUnits: number
  payingBuyers: number
  establishedCreditBaseUnits: number
  establishedBuyers: number
  /** countedPaidTrust of the record's counters: the SQL stores sort by trust reading it (no record field holds it). */
  paidPoints: number
  ownerProven: number
  listing: string
  listingMessage: string | null
  skillText: string
  cheapestPriceBaseUnits: number | null
  sellsFree: number
}

/** A skill's row (`skills`), `position` its place in the agent's list. */
export type SkillRow = {
  agentKey: string
  position: number
  slug: string
  name: string
  nameKey: string
  description: string | null
  type: string
  priceBaseUnits: number | null
  currency: string
  sla: string | null
  slaSeconds: number | null
  reviewSeconds: number
  reveal: string
  url: string | null
  inputSchema: string | null
}

/** A user's row (`users`); `showcase` is JSON text. */
export type UserRow = {
  nameKey: string
  username: string
  walletAddress: string
  bio: string | null
  showcase: string
  inviteCode: string
  createdAt: number
  updatedAt: number
}

/** A milestone's row (`milestones`). */
export type MilestoneRow = {
  seq: number
  id: string
  agentKey: string
  date: string
  title: string
  description: string | null
  proof: string | null
  trust: string
  createdAt: number
}

/** A feed event's row (`events`): `seq` is the public id, `data` JSON text. */
export type EventRow = {
  seq: number
  kind: string
  agent: string
  at: number
  summary: string
  data: string
  taskId: string | null
}

/** Joins the searched texts of an agent's skills: a control character, which q cannot hold, so no match spans two. */
const SKILL_TEXT_SEPARATOR = '\u001f'

/** The agent columns derived from its skills, written in the same transaction as the skills. */
export function skillColumns(skills: readonly SkillRecord[]) {
  const cheapest = cheapestPurchasable(skills)
  return {
    skillText: skills
      .flatMap((skill) => [skill.name, skill.slug, skill.description ?? ''])
      .join(SKILL_TEXT_SEPARATOR),
    // Prices are capped far below 2^53 base units, so the integer column holds them exactly.
    cheapestPriceBaseUnits: cheapest === null ? null : Number(cheapest),
    sellsFree: skills.some((skill) => skill.type === 'free') ? 1 : 0,
  }
}

/** An agent's skill rows in the order the agent listed them. */
export const byPosition = <Row extends SkillRow>(rows: Row[]): Row[] =>
  rows.sort((a, b) => a.position - b.position)

/** Skill rows of several agents by agent key, each agent's in the order it listed them. */
export function skillsByAgent<Row extends SkillRow>(rows: Row[]): Map<string, Row[]> {
  const grouped = new Map<string, Row[]>()
  for (const row of rows) {
    const list = grouped.get(row.agentKey)
    if (list) list.push(row)
    else grouped.set(row.agentKey, [row])
  }
  for (const list of grouped.values()) byPosition(list)
  return grouped
}

/** The record of a skill row. */
export function toSkillRecord(row: SkillRow): SkillRecord {
  return {
    name: row.name,
    slug: row.slug,
    description: row.description,
    type: row.type as SkillRecord['type'],
    priceBaseUnits: row.priceBaseUnits === null ? null : BigInt(row.priceBaseUnits),
    currency: 'USDC',
    sla: row.sla,
    slaSeconds: row.slaSeconds,
    reviewSeconds: row.reviewSeconds,
    reveal: row.reveal as SkillRecord['reveal'],
    url: row.url,
    input: row.inputSchema === null ? null : (JSON.parse(row.inputSchema) as SkillRecord['input']),
  }
}

/** The rows of an agent's skills, in its order. */
export function toSkillRows(agentKey: string, list: readonly SkillRecord[]): SkillRow[] {
  return list.map((skill, position) => ({
    agentKey,
    position,
    slug: skill.slug,
    name: skill.name,
    nameKey: skill.name.toLowerCase(),
    description: skill.description,
    type: skill.type,
    // Prices are capped far below 2^53 base units, so the integer column holds them exactly.
    priceBaseUnits: skill.priceBaseUnits === null ? null : Number(skill.priceBaseUnits),
    currency: skill.currency,
    sla: skill.sla,
    slaSeconds: skill.slaSeconds,
    reviewSeconds: skill.reviewSeconds,
    reveal: skill.reveal,
    url: skill.url,
    inputSchema: skill.input === null ? null : JSON.stringify(skill.input),
  }))
}

/** The record of an agent row and its skill rows (in the agent's order). */
export function toAgentRecord(row: AgentRow, skillRows: SkillRow[]): AgentRecord {
  return {
    name: row.name,
    bio: row.bio,
    platform: row.platform as AgentRecord['platform'],
    model: row.model,
    walletAddress: row.walletAddress as Address | null,
    basename: row.basename,
    skills: skillRows.map(toSkillRecord),
    status: 'free',
    apiKeyHash: row.apiKeyHash,
    pairingCodeHash: row.pairingCodeHash,
    pairingCodeUsedAt: dateOf(row.pairingCodeUsedAt),
    pairingCodeExpiresAt: dateOf(row.pairingCodeExpiresAt),
    ownerUsername: row.ownerUsername,
    lastSeen: dateOf(row.lastSeen),
    lastActiveAt: new Date(row.lastActiveAt),
    createdAt: new Date(row.createdAt),
    updatedAt: new Date(row.updatedAt),
    revision: row.revision,
    verifiedMilestones: row.verifiedMilestones,
    claimedMilestones: row.claimedMilestones,
    completedTasks: row.completedTasks,
    onTimeTasks: row.onTimeTasks,
    lateTasks: row.lateTasks,
    refundedTasks: row.refundedTasks,
    disputedTasks: row.disputedTasks,
    ratingCount: row.ratingCount,
    ratingSum: row.ratingSum,
    ratedBuyers: row.ratedBuyers,
    ratingVotes: row.ratingVotes,
    ratingWeight: row.ratingWeight,
    reliabilityVotes: row.reliabilityVotes,
    reliabilityWeight: row.reliabilityWeight,
    trustCreditBaseUnits: BigInt(row.trustCreditBaseUnits),
    payingBuyers: row.payingBuyers,
    establishedCreditBaseUnits: BigInt(row.establishedCreditBaseUnits),
    establishedBuyers: row.establishedBuyers,
    ownerProven: row.ownerProven === 1,
    // Absent when at their defaults, as records made in code leave them.
    ...(row.listing !== 'active' && { listing: row.listing as Listing }),
    ...(row.listingMessage !== null && { listingMessage: row.listingMessage }),
  }
}

/** The row of an agent (its skills' rows apart: toSkillRows). */
export function toAgentRow(agent: AgentRecord): AgentRow {
  return {
    nameKey: nameKey(agent.name),
    name: agent.name,
    bio: agent.bio,
    platform: agent.platform,
    model: agent.model,
    walletAddress: agent.walletAddress,
    basename: agent.basename,
    status: agent.status,
    apiKeyHash: agent.apiKeyHash,
    pairingCodeHash: agent.pairingCodeHash,
    pairingCodeUsedAt: ms(agent.pairingCodeUsedAt),
    pairingCodeExpiresAt: ms(agent.pairingCodeExpiresAt),
    ownerUsername: agent.ownerUsername,
    ownerKey: agent.ownerUsername ? usernameKey(agent.ownerUsername) : null,
    lastSeen: ms(agent.lastSeen),
    lastActiveAt: agent.lastActiveAt.getTime(),
    createdAt: agent.createdAt.getTime(),
    updatedAt: agent.updatedAt.getTime(),
    revision: agent.revision,
    verifiedMilestones: agent.verifiedMilestones,
    claimedMilestones: agent.claimedMilestones,
    completedTasks: agent.completedTasks,
    onTimeTasks: agent.onTimeTasks,
    lateTasks: agent.lateTasks,
    refundedTasks: agent.refundedTasks,
    disputedTasks: agent.disputedTasks,
    ratingCount: agent.ratingCount,
    ratingSum: agent.ratingSum,
    ratedBuyers: agent.ratedBuyers,
    ratingVotes: agent.ratingVotes,
    // Credit is capped per buyer wallet, so the sum stays far below 2^53 base units.
    ratingWeight: agent.ratingWeight,
    reliabilityVotes: agent.reliabilityVotes,
    reliabilityWeight: agent.reliabilityWeight,
    trustCreditBaseUnits: Number(agent.trustCreditBaseUnits),
    payingBuyers: agent.payingBuyers,
    establishedCreditBaseUnits: Number(agent.establishedCreditBaseUnits),
    establishedBuyers: agent.establishedBuyers,
    paidPoints: countedPaidTrust(agent),
    ownerProven: agent.ownerProven ? 1 : 0,
    listing: agent.listing ?? 'active',
    listingMessage: agent.listingMessage ?? null,
    ...skillColumns(agent.skills),
  }
}

/** The record of a user row. */
export function toUserRecord(row: UserRow): UserRecord {
  return {
    username: row.username,
    walletAddress: row.walletAddress as Address,
    bio: row.bio,
    showcase: JSON.parse(row.showcase),
    inviteCode: row.inviteCode,
    createdAt: new Date(row.createdAt),
    updatedAt: new Date(row.updatedAt),
  }
}

/** The row of a new user. */
export function toUserRow(user: UserRecord): UserRow {
  return {
    nameKey: usernameKey(user.username),
    username: user.username,
    walletAddress: user.walletAddress,
    bio: user.bio,
    showcase: JSON.stringify(user.showcase),
    inviteCode: user.inviteCode,
    createdAt: user.createdAt.getTime(),
    updatedAt: user.updatedAt.getTime(),
  }
}

/** The record of a milestone row, under its agent's registered name. */
export function toMilestoneRecord(row: MilestoneRow, agentName: string): MilestoneRecord {
  return {
    id: row.id,
    agentName,
    date: row.date,
    title: row.title,
    description: row.description,
    proof: row.proof,
    trust: row.trust as MilestoneRecord['trust'],
    createdAt: new Date(row.createdAt),
  }
}

/** The row of a feed event (its `seq` is the database's). */
export function toEventRow(event: FeedEventInput): Omit<EventRow, 'seq'> {
  return {
    kind: event.kind,
    agent: event.agent,
    at: event.at.getTime(),
    summary: event.summary,
    data: JSON.stringify(event.data),
    taskId: event.taskId ?? null,
  }
}

/** The record of a feed event row. */
export function toEventRecord(row: EventRow): FeedEventRecord {
  return {
    id: String(row.seq),
    kind: row.kind as FeedEventRecord['kind'],
    agent: row.agent,
    at: new Date(row.at),
    summary: row.summary,
    data: JSON.parse(row.data),
    ...(row.taskId !== null && { taskId: row.taskId }),
  }
}
