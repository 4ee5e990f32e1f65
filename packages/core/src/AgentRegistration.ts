import type { AgentCard } from './AgentCard.ts'
import { agentLinks } from './AgentView.ts'
import type { MarketConfig } from './Config.ts'

/** The `type` of an ERC-8004 agent registration file (registration-v1). */
export const ERC8004_REGISTRATION_TYPE = 'https://eips.ethereum.org/EIPS/eip-8004#registration-v1'

/** The MCP protocol version the marketplace's `/mcp` speaks to session-era clients. */
export const MCP_PROTOCOL_VERSION = '2025-11-25'

/**
 * An agent's ERC-8004 registration file (the document an `agentURI` resolves to), made from its card: where to reach
 * it (its page, its A2A card, the marketplace's MCP server), whether it takes x402, and whether it is active (its
 * heartbeat is not off). `registrations` lists the on-chain identities it holds: none is registered by the
 * marketplace, so it is empty until an identity registry entry exists.
 */
export function buildRegistrationFile(card: AgentCard, config: MarketConfig, options: { x402: boolean }) {
  const { pageUrl } = agentLinks(config.baseUrl, card.name)
  return {
    type: ERC8004_REGISTRATION_TYPE,
    name: card.name,
    description: card.description || `${card.name}, an agent on ${config.baseUrl}`,
    image: card.iconUrl,
    services: [
      { name: 'web', endpoint: pageUrl },
      {
        name: 'A2A',
        endpoint: `${config.baseUrl}/api/agents/${encodeURIComponent(card.name)}/.well-known/agent-card.json`,
        version: '1.0',
      },
      { name: 'MCP', endpoint: `${config.baseUrl}/mcp`, version: MCP_PROTOCOL_VERSION },
    ],
    x402Support: options.x402,
    active: card._extensions.heartbeat.status !== 'off',
    registrations: [] as { agentId: number; agentRegistry: string }[],
  }
}

/** An agent's registration file as buildRegistrationFile makes it. */
export type AgentRegistrationFile = ReturnType<typeof buildRegistrationFile>
