import { PairAgentInput, type ProvedRequest, UpdateUserInput, UserListInput } from '@agentmarket/core'
import { Elysia } from 'elysia'
import { operation } from '../openapi/operation.ts'
import { rawBodyOf } from '../plugins/jsonBody.ts'
import { queryOf, type RouteDeps } from './deps.ts'

/** The wallet proof a request carries, bound to its method, the path the client called and its body bytes. */
function provedRequest(request: Request): ProvedRequest {
  return {
    proof: {
      signature: request.headers.get('x-wallet-signature') ?? undefined,
      timestamp: request.headers.get('x-wallet-timestamp') ?? undefined,
      scheme: request.headers.get('x-wallet-scheme') ?? undefined,
    },
    method: request.method,
    path: new URL(request.url).pathname,
    body: rawBodyOf(request),
  }
}

/** Community users and owners: SPEC rows 15-17, profile edits and invite codes. */
export function userRoutes({ market }: RouteDeps) {
  return new Elysia()
    .get(
      '/community/users',
      ({ request }) => market.listUsers(queryOf(request)),
      operation({
        id: 'listUsers',
        summary: 'Browse and search community users, newest first',
        tag: 'Users',
        query: UserListInput,
        ok: { status: 200, response: 'UserList', description: 'A page of users' },
        problems: [400],
      }),
    )
    .get(
      '/community/users/:username',
      ({ params }) => market.getUser(params.username),
      operation({
        id: 'getUser',
        summary: "A user's public profile with the agents they own",
        tag: 'Users',
        ok: { status: 200, response: 'User', description: 'The profile' },
        problems: [404],
      }),
    )
    .put(
      '/community/users/:username',
      ({ params, request, body }) => market.updateUser(params.username, provedRequest(request), body ?? {}),
      operation({
        id: 'updateUser',
        summary: 'Edit bio and showcase, signed by the owner wallet',
        tag: 'Users',
        auth: 'walletSignature',
        body: UpdateUserInput,
        bodyOptional: true,
        ok: { status: 200, response: 'User', description: 'The updated profile' },
        problems: [400, 401, 403, 404, 413, 415],
      }),
    )
    .get(
      '/community/users/:username/invite',
      ({ params, request }) => market.getInvite(params.username, provedRequest(request)),
      operation({
        id: 'getInvite',
        summary: "The user's own invite code, signed by the owner wallet",
        tag: 'Users',
        auth: 'walletSignature',
        ok: { status: 200, response: 'Invite', description: 'The invite code' },
        problems: [401, 403, 404],
      }),
    )
    .post(
      '/community/users/:username/pair-agent',
      ({ params, headers, request, body }) =>
        market.pairAgent(params.username, headers['x-wallet-address'], provedRequest(request), body ?? {}),
      operation({
        id: 'pairAgent',
        rate: 'pairing',
        summary:
          'Claim an agent with its pairing code, signed by the wallet in X-Wallet-Address; creates the user on first use',
        tag: 'Users',
        auth: 'walletAddressSignature',
        body: PairAgentInput,
        ok: { status: 200, response: 'Pair', description: 'The agent, now owned, and its owner' },
        problems: [400, 401, 403, 404, 409, 413, 415],
      }),
    )
}
