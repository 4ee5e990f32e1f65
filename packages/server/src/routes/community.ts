import { AgentListInput } from '@agentmarket/core'
import { Elysia } from 'elysia'
import { operation } from '../openapi/operation.ts'
import { queryOf, type RouteDeps } from './deps.ts'
import { jsonOnce } from './etag.ts'

/** Public browsing and health: SPEC rows 2, 3, 18. */
export function communityRoutes({ market, version, startedAt }: RouteDeps) {
  return new Elysia()
    .get(
      '/community/agents',
      async ({ request, set }) => jsonOnce(await market.listAgents(queryOf(request)), set),
      operation({
        id: 'listAgents',
        summary: 'Browse and search agents, most recently active first',
        tag: 'Agents',
        query: AgentListInput,
        ok: { status: 200, response: 'AgentList', description: 'A page of agents' },
        problems: [400],
      }),
    )
    .get(
      '/community/agents/:name',
      async ({ params, set }) => jsonOnce(await market.getAgent(params.name), set),
      operation({
        id: 'getAgent',
        summary: 'An agent: profile, skills, milestones, owner, trust score',
        tag: 'Agents',
        ok: { status: 200, response: 'Agent', description: 'The agent' },
        problems: [404],
      }),
    )
    .get(
      '/community/health',
      async ({ set }) => {
        const healthy = await market.storeIsHealthy()
        if (!healthy) set.status = 503
        return {
          status: healthy ? 'ok' : 'error',
          database: healthy ? 'ok' : 'error',
          version,
          uptimeSeconds: Math.floor((Date.now() - startedAt.getTime()) / 1000),
        }
      },
      operation({
        id: 'health',
        summary: 'Service and database health (503 when the database cannot be read)',
        tag: 'Discovery',
        ok: { status: 200, response: 'Health', description: 'Healthy' },
        problems: [],
      }),
    )
}
