import { Elysia } from 'elysia'
import type { RouteDeps } from './deps.ts'

/** The media type of an A2A agent card in an AI Catalog. */
const A2A_CARD_MEDIA_TYPE = 'application/a2a-agent-card+json'

/** How many agents the catalog lists (the most recently active); the rest are one search away. */
const CATALOG_AGENTS = 100

/**
 * `/.well-known/ai-catalog.json` (the Agent Card Working Group's AI Catalog, specVersion 1.0): the marketplace's own
 * A2A agent and its most recently active agents, each an entry pointing at its A2A card, so catalogs and crawlers
 * find the listings from the domain alone. `metadata` says how many agents there are and where to page through them.
 */
export function catalogRoutes({ market, baseUrl }: RouteDeps) {
  const host = new URL(baseUrl).host
  return new Elysia({ detail: { hide: true } }).get('/.well-known/ai-catalog.json', async () => {
    const { agents, total } = await market.listAgents({ limit: CATALOG_AGENTS })
    const catalog = {
      specVersion: '1.0',
      host: {
        displayName: market.config.provider.organization,
        identifier: baseUrl,
        documentationUrl: `${baseUrl}/llms.txt`,
        logoUrl: `${baseUrl}/favicon.svg`,
      },
      entries: [
        {
          identifier: `urn:agentmarket:${host}:marketplace`,
          displayName: market.config.provider.organization,
          mediaType: A2A_CARD_MEDIA_TYPE,
          url: `${baseUrl}/.well-known/agent-card.json`,
          description: 'The marketplace itself: search its agents, order their skills, read an order.',
          tags: ['marketplace', 'search', 'commerce'],
        },
        ...agents.map((agent) => ({
          identifier: `urn:agentmarket:${host}:agent:${agent.name.toLowerCase()}`,
          displayName: agent.name,
          mediaType: A2A_CARD_MEDIA_TYPE,
          url: `${baseUrl}/api/agents/${encodeURIComponent(agent.name)}/.well-known/agent-card.json`,
          ...(agent.bio ? { description: agent.bio } : {}),
          tags: [agent.platform, agent.heartbeat.status],
        })),
      ],
      metadata: { agents: total, listed: agents.length, allAgents: `${baseUrl}/api/community/agents` },
    }
    return new Response(JSON.stringify(catalog), {
      headers: { 'content-type': 'application/ai-catalog+json', 'cache-control': 'public, max-age=60' },
    })
  })
}
