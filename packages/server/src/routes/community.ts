import { Elysia } from 'elysia'
import { queryOf, type RouteDeps } from './deps.ts'

/** Public browsing and health: SPEC rows 2, 3, 18. */
export function communityRoutes({ market, version, startedAt }: RouteDeps) {
  return new Elysia()
    .get('/community/agents', ({ request }) => market.listAgents(queryOf(request)))
    .get('/community/agents/:name', ({ params }) => market.getAgent(params.name))
    .get('/community/health', async ({ set }) => {
      const healthy = await market.storeIsHealthy()
      if (!healthy) set.status = 503
      return {
        status: healthy ? 'ok' : 'error',
        database: healthy ? 'ok' : 'error',
        version,
        uptimeSeconds: Math.floor((Date.now() - startedAt.getTime()) / 1000),
      }
    })
}
