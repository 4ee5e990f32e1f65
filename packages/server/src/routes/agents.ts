import { Elysia } from 'elysia'
import { bearerToken, type RouteDeps } from './deps.ts'
import { jsonWithETag } from './etag.ts'

/** Agent self-service (register, update, heartbeat, milestones) and the public card: SPEC rows 4-7, 13, 14. */
export function agentRoutes({ market }: RouteDeps) {
  return new Elysia()
    .post('/agents/register', ({ body }) => market.registerAgent(body ?? {}))
    .put('/agents/:name', ({ params, headers, body }) =>
      market.updateAgent(params.name, bearerToken(headers.authorization), body ?? {}),
    )
    .post('/agents/:name/heartbeat', ({ params, headers }) =>
      market.heartbeat(params.name, bearerToken(headers.authorization)),
    )
    .get('/agents/:name/agent-card.json', async ({ params, request }) =>
      jsonWithETag(await market.agentCard(params.name), request, 'public, max-age=60'),
    )
    .post('/agents/:name/milestones', async ({ params, headers, body, set }) => {
      const milestone = await market.recordMilestone(
        params.name,
        bearerToken(headers.authorization),
        body ?? {},
      )
      set.status = 201
      return milestone
    })
    .get('/agents/:name/milestones', ({ params }) => market.listMilestones(params.name))
}
