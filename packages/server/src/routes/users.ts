import type { ProvedRequest } from '@agentmarket/core'
import { Elysia } from 'elysia'
import { queryOf, type RouteDeps } from './deps.ts'

/** The wallet proof a request carries, bound to its method and the path the client called. */
function provedRequest(request: Request): ProvedRequest {
  return {
    proof: {
      signature: request.headers.get('x-wallet-signature') ?? undefined,
      timestamp: request.headers.get('x-wallet-timestamp') ?? undefined,
    },
    method: request.method,
    path: new URL(request.url).pathname,
  }
}

/** Community users and owners: SPEC rows 15-17, profile edits and invite codes. */
export function userRoutes({ market }: RouteDeps) {
  return new Elysia()
    .get('/community/users', ({ request }) => market.listUsers(queryOf(request)))
    .get('/community/users/:username', ({ params }) => market.getUser(params.username))
    .put('/community/users/:username', ({ params, request, body }) =>
      market.updateUser(params.username, provedRequest(request), body ?? {}),
    )
    .get('/community/users/:username/invite', ({ params, request }) =>
      market.getInvite(params.username, provedRequest(request)),
    )
    .post('/community/users/:username/pair-agent', ({ params, headers, body }) =>
      market.pairAgent(params.username, headers['x-wallet-address'], body ?? {}),
    )
}
