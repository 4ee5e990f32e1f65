import { type AgentRecord, nameKey } from './Agent.ts'
import type { LastSeenRange } from './Liveness.ts'
import type { SkillRecord } from './Skill.ts'
import { trustScore } from './Trust.ts'
import { usernameKey } from './User.ts'

/** Orders of the agent list: most recently active, highest trust, cheapest purchasable price, newest. */
export const AGENT_SORTS = ['activity', 'trust', 'price', 'new'] as const

/** One order of the agent list. */
export type AgentSort = (typeof AGENT_SORTS)[number]

/** What an agent must sell to be listed: at least one free skill, or at least one purchasable one. */
export type SellsFilter = 'free' | 'paid'

/** The filters of the agent list; absent ones keep every agent. */
export type AgentFilters = {
  /** A literal, case-insensitive (ASCII) substring of one of `searchedTexts`. */
  q?: string
  sells?: SellsFilter
  /** Keeps agents with a purchasable skill priced at or under this (base units). */
  maxPriceBaseUnits?: bigint
  /** Keeps agents whose last heartbeat is in this range (`lastSeenRange` of a liveness). */
  lastSeen?: LastSeenRange
  /** Keeps agents owned by this username (any case). */
  owner?: string
}

/** The order of an agent list; trust ranks by the score at `now`, which moves with liveness. */
export type AgentOrder = { sort?: Exclude<AgentSort, 'trust'> } | { sort: 'trust'; now: Date }

/**
 * The texts `q` is looked for in, each on its own (a match never spans two): the name, the bio, and each skill's name,
 * slug (the skill's tag in the agent card) and description.
 */
export function searchedTexts(agent: Pick<AgentRecord, 'name' | 'bio' | 'skills'>): string[] {
  const skills = agent.skills.flatMap((skill) => [skill.name, skill.slug, skill.description ?? ''])
  return [agent.name, agent.bio ?? '', ...skills]
}

/** Lower-cases ASCII letters only, matching SQLite's `lower()` so every store searches alike. */
export function asciiLower(text: string): string {
  return text.replace(/[A-Z]/g, (letter) => letter.toLowerCase())
}

/** The lowest price among the purchasable skills, or null when none is for sale. */
export function cheapestPurchasable(skills: readonly SkillRecord[]): bigint | null {
  let lowest: bigint | null = null
  for (const skill of skills)
    if (skill.type === 'purchasable' && skill.priceBaseUnits !== null)
      lowest = lowest === null || skill.priceBaseUnits < lowest ? skill.priceBaseUnits : lowest
  return lowest
}

/** Whether `lastSeen` (null: never) is in `range`. */
function inRange(lastSeen: Date | null, { from, before }: LastSeenRange): boolean {
  const time = lastSeen?.getTime() ?? Number.NEGATIVE_INFINITY
  return (from === null || time >= from.getTime()) && (before === null || time < before.getTime())
}

/** Whether `agent` passes every filter: the reference the stores' conformance cases hold them to. */
export function matchesFilters(agent: AgentRecord, filters: AgentFilters): boolean {
  const { q, sells, maxPriceBaseUnits, lastSeen, owner } = filters
  const cheapest = cheapestPurchasable(agent.skills)
  const checks = [
    // A withdrawn listing is out of every list and search (sync returns it as a tombstone).
    agent.listing !== 'deleted',
    !q || searchedTexts(agent).some((text) => asciiLower(text).includes(asciiLower(q))),
    sells !== 'free' || agent.skills.some((skill) => skill.type === 'free'),
    sells !== 'paid' || cheapest !== null,
    maxPriceBaseUnits === undefined || (cheapest !== null && cheapest <= maxPriceBaseUnits),
    !lastSeen || inRange(agent.lastSeen, lastSeen),
    !owner || (agent.ownerUsername !== null && usernameKey(agent.ownerUsername) === usernameKey(owner)),
  ]
  return checks.every(Boolean)
}

const byKey = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** Agents by activity, newest first, then by name key: the default order and every order's last tie-break. */
export function compareByActivity(a: AgentRecord, b: AgentRecord): number {
  return b.lastActiveAt.getTime() - a.lastActiveAt.getTime() || byKey(nameKey(a.name), nameKey(b.name))
}

/** Cheapest purchasable first, agents selling nothing paid last. */
function compareByPrice(a: AgentRecord, b: AgentRecord): number {
  const [x, y] = [cheapestPurchasable(a.skills), cheapestPurchasable(b.skills)]
  if (x === y) return 0
  if (x === null) return 1
  if (y === null) return -1
  return x < y ? -1 : 1
}

/**
 * The comparator of an order: its key, then (ties) most recently active, then name key, which is unique, so a list
 * read page by page never repeats or skips an agent while nothing changes.
 */
export function compareAgents(order: AgentOrder): (a: AgentRecord, b: AgentRecord) => number {
  if (order.sort === 'trust') {
    const { now } = order
    return (a, b) => trustScore(b, now) - trustScore(a, now) || compareByActivity(a, b)
  }
  if (order.sort === 'price') return (a, b) => compareByPrice(a, b) || compareByActivity(a, b)
  if (order.sort === 'new')
    return (a, b) => b.createdAt.getTime() - a.createdAt.getTime() || byKey(nameKey(a.name), nameKey(b.name))
  return compareByActivity
}
