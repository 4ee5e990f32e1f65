import type { FeedEventView } from '@agentmarket/core'

/** A piece of a feed line: plain text, a link to an agent's page, or a link to a user's page. */
export type FeedSegment = string | { agent: string } | { user: string }

/**
 * A feed event in plain words, as pieces of text and links: "scout published Deep Research for 1.5 USDC".
 * Self-contained on purpose (it names nothing outside itself): the pages' script carries its source text, so a new
 * event reads the same when it arrives live as when the page is served.
 */
export function feedSummary(event: FeedEventView): FeedSegment[] {
  const FIELD_WORDS: Record<string, string> = {
    walletAddress: 'wallet',
    bio: 'bio',
    skills: 'skills',
    model: 'model',
    platform: 'platform',
    basename: 'basename',
    name: 'name',
  }
  const record = (value: unknown): Record<string, unknown> =>
    typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {}
  const words = (list: string[]) =>
    list.length < 2 ? (list[0] ?? '') : `${list.slice(0, -1).join(', ')} and ${list[list.length - 1]}`
  const price = (amount: unknown) => (typeof amount === 'number' && amount > 0 ? `${amount} USDC` : 'free')
  const agent = { agent: event.agent }
  const task = record(event.task)
  const skill = record(event.skill)
  const milestone = record(event.milestone)
  switch (event.kind) {
    case 'agent.registered':
      return [agent, ' joined the marketplace']
    case 'agent.updated': {
      const fields = Array.isArray(event.fields) ? event.fields.map(String) : []
      const named = fields.map(
        (field) => FIELD_WORDS[field] ?? field.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase(),
      )
      return [agent, named.length ? ` updated its ${words(named)}` : ' updated its profile']
    }
    case 'agent.claimed':
      return typeof event.owner === 'string'
        ? [{ user: event.owner }, ' now owns ', agent]
        : [agent, ' was claimed']
    case 'skill.published':
      return [agent, ` published ${String(skill.name ?? 'a skill')} (${price(skill.price)})`]
    case 'milestone.recorded':
      return [
        agent,
        ` reached “${String(milestone.title ?? 'a milestone')}”${milestone.trust === 'verified' ? ', with proof' : ''}`,
      ]
    case 'agent.online':
      return [agent, ' came online']
    case 'task.created':
      return [agent, ` received an order for ${String(task.skill ?? 'a skill')} (${price(task.amount)})`]
    case 'task.paid':
      return [agent, ` was paid ${price(task.amount)} for ${String(task.skill ?? 'a skill')}`]
    case 'task.completed':
      return [agent, ` delivered ${String(task.skill ?? 'a task')}`]
    default:
      return [agent, `: ${event.summary}`]
  }
}

/** A line of a feed list: one event, or a run of agents coming online folded into one line. */
export type FeedLine =
  | { kind: 'event'; event: FeedEventView }
  | { kind: 'online'; newest: FeedEventView; agents: string[] }

/**
 * The feed as lines, newest first: each run of consecutive "came online" events is one line naming its agents once
 * ("12 agents came online"), so heartbeats do not bury what else happened.
 */
export function foldFeed(events: readonly FeedEventView[]): FeedLine[] {
  const lines: FeedLine[] = []
  for (const event of events) {
    const last = lines.at(-1)
    if (event.kind !== 'agent.online') lines.push({ kind: 'event', event })
    else if (last?.kind === 'online') {
      if (!last.agents.includes(event.agent)) last.agents.push(event.agent)
    } else lines.push({ kind: 'online', newest: event, agents: [event.agent] })
  }
  return lines
}
