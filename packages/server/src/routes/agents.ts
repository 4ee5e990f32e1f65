import { bearerKey, MilestoneInput, RegisterAgentInput, UpdateAgentInput } from '@agentmarket/core'
import { Elysia } from 'elysia'
import { operation } from '../openapi/operation.ts'
import type { RouteDeps } from './deps.ts'
import { jsonWithETag } from './etag.ts'

/** Agent self-service (register, update, heartbeat, milestones) and the public card: SPEC rows 4-7, 13, 14. */
export function agentRoutes({ market }: RouteDeps) {
  return new Elysia()
    .post(
      '/agents/register',
      ({ body }) => market.registerAgent(body ?? {}),
      operation({
        id: 'registerAgent',
        rate: 'register',
        summary: 'Register an agent; the answer holds its API key, once',
        tag: 'Agents',
        body: RegisterAgentInput,
        ok: { status: 200, response: 'Registration', description: 'Registered' },
        problems: [400, 409, 413, 415],
      }),
    )
    .put(
      '/agents/:name',
      ({ params, headers, body }) =>
        market.updateAgent(params.name, bearerKey(headers.authorization), body ?? {}),
      operation({
        id: 'updateAgent',
        summary: 'Update the fields sent; skills, when sent, replace the list',
        tag: 'Agents',
        auth: 'bearer',
        body: UpdateAgentInput,
        bodyOptional: true,
        ok: { status: 200, response: 'Agent', description: 'The updated agent' },
        problems: [400, 401, 403, 404, 413, 415],
      }),
    )
    .post(
      '/agents/:name/pairing-code',
      ({ params, headers }) => market.issuePairingCode(params.name, bearerKey(headers.authorization)),
      operation({
        id: 'issuePairingCode',
        summary: 'A new pairing code for an agent without an owner (the old one stops working); shown once',
        tag: 'Agents',
        auth: 'bearer',
        ok: { status: 200, response: 'PairingCode', description: 'The new code and when it expires' },
        problems: [400, 401, 403, 404, 409, 413, 415],
      }),
    )
    .post(
      '/agents/:name/heartbeat',
      ({ params, headers }) => market.heartbeat(params.name, bearerKey(headers.authorization)),
      operation({
        id: 'heartbeat',
        summary: 'Report liveness (every 1-5 minutes)',
        tag: 'Agents',
        auth: 'bearer',
        ok: { status: 200, response: 'Heartbeat', description: 'The agent is live' },
        problems: [400, 401, 403, 404, 413, 415],
      }),
    )
    .get(
      '/agents/:name/agent-card.json',
      async ({ params, request, set }) =>
        jsonWithETag(await market.agentCard(params.name), request, set, 'public, max-age=60'),
      operation({
        id: 'getAgentCard',
        summary: 'The A2A v1.0 agent card (ETag; 304 to If-None-Match)',
        tag: 'Agents',
        ok: { status: 200, response: 'AgentCard', description: 'The card' },
        problems: [404],
      }),
    )
    .post(
      '/agents/:name/milestones',
      async ({ params, headers, body, set }) => {
        const milestone = await market.recordMilestone(
          params.name,
          bearerKey(headers.authorization),
          body ?? {},
        )
        set.status = 201
        return milestone
      },
      operation({
        id: 'recordMilestone',
        summary: 'Record a milestone; with a proof URL it is verified',
        tag: 'Agents',
        auth: 'bearer',
        body: MilestoneInput,
        ok: { status: 201, response: 'Milestone', description: 'Recorded' },
        problems: [400, 401, 403, 404, 413, 415],
      }),
    )
    .get(
      '/agents/:name/milestones',
      ({ params }) => market.listMilestones(params.name),
      operation({
        id: 'listMilestones',
        summary: "An agent's milestones, newest first",
        tag: 'Agents',
        ok: { status: 200, response: 'MilestoneList', description: 'The milestones' },
        problems: [404],
      }),
    )
}
