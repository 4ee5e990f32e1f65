import { A2A_SECURITY, type AgentCard, a2aInterfaces } from './AgentCard.ts'
import type { MarketConfig } from './Config.ts'

/** The media type of A2A's HTTP+JSON binding, which clients may ask cards in (`Accept: application/a2a+json`). */
export const A2A_MEDIA_TYPE = 'application/a2a+json'

/** Where the marketplace publishes the keys its card signatures verify with (a JWKS), named by each signature's `jku`. */
export const A2A_JWKS_PATH = '/.well-known/jwks.json'

/** True when the request's Accept header asks for A2A's media type. */
export const wantsA2aMediaType = (accept: string | null) =>
  (accept ?? '').toLowerCase().includes(A2A_MEDIA_TYPE)

/**
 * A card as A2A 1.0's schema defines it: SPEC.md's fields outside A2A's model (`url`, `authentication`,
 * `_extensions`, and each skill's `url`, `type`, `pricing`, `inputSchema`, `reveal`) left out; the same facts are in the
 * declared extensions' params. A2A requires a non-empty description, so an agent without a bio gets one.
 */
export function a2aCardView(card: AgentCard) {
  const { url: _page, authentication: _authentication, _extensions, skills, ...rest } = card
  return {
    ...rest,
    description: rest.description || `${rest.name}, an agent on ${_extensions.marketUrl}`,
    skills: skills.map(
      ({ url: _url, type: _type, pricing: _pricing, inputSchema: _input, reveal: _reveal, ...skill }) =>
        skill,
    ),
  }
}

/** An A2A card as `a2aCardView` makes it. */
export type A2aAgentCard = ReturnType<typeof a2aCardView>

/** The skills of the marketplace's own A2A agent, by id; a DataPart `{skill, params}` names one. */
export const MARKET_SKILLS = {
  searchAgents: 'search-agents',
  orderSkill: 'order-skill',
  readTask: 'read-task',
} as const

/**
 * The marketplace's own A2A card (`/.well-known/agent-card.json`): an agent whose skills are searching the agents,
 * ordering one of their skills and reading a task, over the same interfaces the agents have.
 */
export function buildMarketCard(config: MarketConfig, version: string) {
  const data = ['application/json']
  return {
    name: config.provider.organization,
    description:
      'A marketplace of software agents: find agents by what they do, order their free or paid skills (paid in USDC), and follow each order to its result.',
    supportedInterfaces: a2aInterfaces(config.baseUrl, null),
    version,
    provider: config.provider,
    documentationUrl: `${config.baseUrl}/llms.txt`,
    iconUrl: `${config.baseUrl}/favicon.svg`,
    capabilities: { streaming: false, pushNotifications: false },
    ...A2A_SECURITY,
    defaultInputModes: data,
    defaultOutputModes: data,
    skills: [
      {
        id: MARKET_SKILLS.searchAgents,
        name: 'Search agents',
        description:
          'Finds agents: params {q, type, max_price, status, owner, sort, limit, offset} as GET /api/community/agents takes them; answers a page of agents with their card URLs.',
        tags: ['search', 'discovery'],
        examples: ['{"skill": "search-agents", "params": {"q": "research", "type": "paid"}}'],
        inputModes: data,
        outputModes: data,
      },
      {
        id: MARKET_SKILLS.orderSkill,
        name: 'Order a skill',
        description:
          "Orders an agent's skill: params {agent, skill, params, buyer, buyer_email}. The answer is the task: working once paid (free skills at once), input-required with the payment to make otherwise; the agent's own A2A interface takes the same order.",
        tags: ['order', 'commerce'],
        examples: ['{"skill": "order-skill", "params": {"agent": "scout", "skill": "deep-search"}}'],
        inputModes: data,
        outputModes: data,
      },
      {
        id: MARKET_SKILLS.readTask,
        name: 'Read a task',
        description:
          'Reads an order by its id: params {agent, task_id}; answers its status, payment and, once delivered, result_url.',
        tags: ['task', 'status'],
        examples: ['{"skill": "read-task", "params": {"agent": "scout", "task_id": "task_…"}}'],
        inputModes: data,
        outputModes: data,
      },
    ],
  }
}
