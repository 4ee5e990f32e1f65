import * as v from 'valibot'
import { type AgentRecord, type AgentSummary, type AgentView, nameKey, toAgentSummary } from '../../Agent.ts'
import { type AgentCard, buildAgentCard } from '../../AgentCard.ts'
import { livenessChangesAt } from '../../Liveness.ts'
import { amountToNumber } from '../../Money.ts'
import { readCache } from '../../ReadCache.ts'
import { noControlCharacters, pageNumber, parseInput, strictFields } from '../../Validation.ts'
import { type ActionContext, agentView, MILESTONES_SHOWN, milestonesOf, requireAgent } from '../context.ts'

/** One page of an agent list, its rows made by the caller. */
export type AgentRowsPage<Row> = { agents: Row[]; total: number; limit: number; offset: number }

/** One page of the agent list. */
export type AgentPage = AgentRowsPage<AgentSummary>

/** A page of the marketplace's agent list: summaries with the cheapest price each sells at (null: none for sale). */
export type BrowsePage = Omit<AgentPage, 'agents'> & {
  agents: (AgentSummary & { cheapestPrice: number | null })[]
}

/** The largest page of any list. */
export const MAX_PAGE_SIZE = 100

/** Query of GET /api/community/agents (and the user list). */
export const AgentListInput = strictFields({
  q: v.optional(
    v.pipe(
      v.string('must be a string'),
      noControlCharacters(),
      v.maxLength(100, 'must be at most 100 characters'),
    ),
  ),
  limit: v.optional(pageNumber(1, MAX_PAGE_SIZE), 20),
  offset: v.optional(pageNumber(0, 1_000_000_000), 0),
})

/** The lowest price among an agent's purchasable skills, in USDC, or null when it sells none. */
function cheapestPrice(agent: AgentRecord): number | null {
  const prices = agent.skills.flatMap((skill) =>
    skill.type === 'purchasable' && skill.priceBaseUnits ? [skill.priceBaseUnits] : [],
  )
  if (prices.length === 0) return null
  // Prices are bigints, which Math.min does not take.
  const [lowest = 0n] = prices.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  return amountToNumber(lowest)
}

/** The public reads of agents (SPEC rows 2-4), memoized by the store's change version and liveness (ADR 0002). */
export function readAgentActions(context: ActionContext) {
  const { store, config, clock } = context
  const cards = readCache<AgentCard>()
  const views = readCache<AgentView>()
  const pages = readCache<AgentRowsPage<unknown>>()
  const changeVersion = () => store.changeVersion?.()

  /** One page of the agent list (most recently active first, filtered by `q`), each agent made a row by `toRow`. */
  const agentPage = async <Row>(
    kind: string,
    query: unknown,
    toRow: (agent: AgentRecord, now: Date) => Row,
  ): Promise<AgentRowsPage<Row>> => {
    const { q, limit, offset } = parseInput(AgentListInput, query ?? {}, 'invalid_query')
    const now = clock.now()
    const key = JSON.stringify([kind, q ?? '', limit, offset])
    const page = await pages.read(key, await changeVersion(), now, async () => {
      const found = await store.listAgents({ q: q || undefined, limit, offset })
      const validUntil = Math.min(...found.agents.map((agent) => livenessChangesAt(agent.lastSeen, now)))
      const value = {
        agents: found.agents.map((agent) => toRow(agent, now)),
        total: found.total,
        limit,
        offset,
      }
      return { value, validUntil }
    })
    // One cache holds both kinds of rows; the kind is part of the key, so a page comes back as the rows it was made as.
    return page as AgentRowsPage<Row>
  }

  return {
    /** The public Agent record. */
    async getAgent(name: string): Promise<AgentView> {
      const now = clock.now()
      return views.read(nameKey(name), await changeVersion(), now, async () => {
        const agent = await requireAgent(context, name)
        return { value: await agentView(context, agent), validUntil: livenessChangesAt(agent.lastSeen, now) }
      })
    },

    /** A page of agents, most recently active first, optionally filtered by `q`. */
    async listAgents(query: unknown): Promise<AgentPage> {
      return agentPage('list', query, (agent, now) => toAgentSummary(agent, now, config.baseUrl))
    },

    /** The agent list of the marketplace page: each row also carries its cheapest purchasable price. */
    async browseAgents(query: unknown): Promise<BrowsePage> {
      return agentPage('browse', query, (agent, now) => ({
        ...toAgentSummary(agent, now, config.baseUrl),
        cheapestPrice: cheapestPrice(agent),
      }))
    },

    /** The A2A v1.0 card of an agent. */
    async agentCard(name: string): Promise<AgentCard> {
      const now = clock.now()
      return cards.read(nameKey(name), await changeVersion(), now, async () => {
        const agent = await requireAgent(context, name)
        const milestones = await milestonesOf(context, agent.name, MILESTONES_SHOWN)
        return {
          value: buildAgentCard(agent, milestones, now, config),
          validUntil: livenessChangesAt(agent.lastSeen, now),
        }
      })
    },
  }
}
