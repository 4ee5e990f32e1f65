import stableStringify from 'safe-stable-stringify'
import type { KeptAnswer } from '../actions/idempotency.ts'
import type { QuotaOwner } from '../actions/idempotencyQuota.ts'
import { hashSecret } from '../Credentials.ts'
import type { MarketplaceActions } from '../Marketplace.ts'
import { inWriteScope } from '../ports/writeScope.ts'
import { addressBucket, clientKeyOf, NETWORK_CEILING_FACTOR, networkBucket } from '../RateLimit.ts'
import type { RouteCall, RouteHeader, RouteReply, RouteRow } from './RouteRow.ts'

/** The headers that name who is asking besides the address: a retry must carry the same credential to be replayed. */
const CREDENTIAL_HEADERS = ['authorization', 'x-wallet-address', 'x-wallet-signature', 'buyer-key']

/** The row honours Idempotency-Key through the route layer: every write, unless its action or credential does. */
export const keptByHost = (row: Pick<RouteRow, 'method' | 'idempotency'>) =>
  row.method !== 'GET' && (row.idempotency ?? 'host') === 'host'

/** The Idempotency-Key header as the OpenAPI document describes it for a row. */
export function idempotencyHeader(row: Pick<RouteRow, 'shownOnce' | 'secretPastQuota'>): RouteHeader {
  const quota = row.secretPastQuota
    ? " It is kept whatever the client's quota of kept answers."
    : " Past the client's quota of kept answers it is not kept (409 idempotency_replay_expired: issue a new one)."
  return {
    name: 'Idempotency-Key',
    description: row.shownOnce
      ? `A retry from the same client, with the same credential, key and body gets the first answer again (Idempotent-Replayed: true), its secret included, for 10 minutes and only while the API key it was sent with still works (else 401 idempotency_credential_revoked); later 409 idempotency_replay_expired, never a second run. Another body: 409 idempotency_key_reused.${quota}`
      : "A retry from the same client, with the same credential, key and body gets the first answer again for 24 hours (Idempotent-Replayed: true), never a second run; an answer over 16 KiB, or past the client's quota of kept answers, is not kept (409 idempotency_replay_expired: read the resource). Another body: 409 idempotency_key_reused.",
    required: false,
  }
}

/**
 * The scope of an Idempotency-Key (or of A2A's messageId): who asks (the client address), with what credential
 * (its API key however it came, a Bearer header over HTTP or the MCP session's, else its credential headers; hashed),
 * and where (`operation`): keys of two scopes never meet, and a retry over another interface meets the first request.
 */
export function idempotencyScope(
  caller: { client: string | null; headers: Headers; apiKey: string | undefined },
  operation: string,
): string {
  const credentials = caller.apiKey
    ? `key:${caller.apiKey}`
    : CREDENTIAL_HEADERS.map((name) => caller.headers.get(name) ?? '').join('\n')
  return [clientKeyOf(caller.client), hashSecret(credentials), operation].join('\n')
}

/**
 * Who is charged for a kept answer (the idempotency quota), as rate limits count a request: its client address (an
 * IPv6 address by its /64, and its /48 with eight quotas, as the rate limits' ceiling) and its API key. So many API keys
 * from one address share the address's quota, and one key used from many addresses is held to its own.
 */
export function idempotencyOwners(caller: {
  client: string | null
  apiKey: string | undefined
}): QuotaOwner[] {
  const owners: QuotaOwner[] = []
  if (caller.client) {
    owners.push({ id: `address:${addressBucket(caller.client)}`, share: 1 })
    const network = networkBucket(caller.client)
    if (network) owners.push({ id: `network:${network}`, share: NETWORK_CEILING_FACTOR })
  }
  if (caller.apiKey) owners.push({ id: `key:${hashSecret(caller.apiKey)}`, share: 1 })
  // A host that names no client address: its requests without a key share one quota.
  return owners.length ? owners : [{ id: 'anonymous', share: 1 }]
}

/** The scope of a row's call: its client and credential, and the method and path it writes. */
function scopeOf(row: RouteRow, call: RouteCall): string {
  const path = row.path.replace(/\{(\w+)\}/g, (_, name: string) => call.params[name] ?? '')
  const caller = { client: call.client(), headers: call.headers, apiKey: call.apiKey }
  return idempotencyScope(caller, `${row.method} ${path}`)
}

/**
 * A digest of what the request sends: its JSON body with keys in order (safe-stable-stringify), so the same body
 * sent over HTTP or as MCP arguments, or with its keys in another order, is the same request.
 */
function fingerprintOf(call: RouteCall): string {
  return hashSecret(`body:${stableStringify(call.body ?? null)}`)
}

/**
 * The answer a retry may get back: a JSON success that did something. A whole Response (a 402 challenge) and an answer
 * that asks to retry later (a 202 with Retry-After: the payment is not final, nothing changed) are never kept, so the
 * retry asks again.
 */
function keptOf(row: RouteRow) {
  const later = new Set(
    (row.alsoOk ?? []).filter((answer) => answer.retryAfter).map((answer) => answer.status),
  )
  return (reply: RouteReply): KeptAnswer | null => {
    if (reply instanceof Response) return null
    const status = reply.status ?? row.ok.status
    if (status < 200 || status > 299 || later.has(status)) return null
    return { status, body: reply.body, headers: reply.headers ?? {} }
  }
}

/** Runs the row's call once per client and key (`market.idempotent`), replaying the first answer to a retry. */
async function callOnce(row: RouteRow, market: MarketplaceActions, call: RouteCall): Promise<RouteReply> {
  const key = call.headers.get('idempotency-key')
  if (key === null) return row.call(market, call)
  // A host may give no params to a path without any.
  const name = row.path.includes('{name}') ? call.params.name : undefined
  const { apiKey } = call
  const request = {
    scope: scopeOf(row, call),
    key,
    fingerprint: fingerprintOf(call),
    shownOnce: row.shownOnce === true,
    keptPastQuota: row.secretPastQuota === true,
    owners: idempotencyOwners({ client: call.client(), apiKey }),
    // A secret is replayed only while the agent's key that asked for it still works (not once rotated away).
    ...(row.auth !== 'none' &&
      apiKey !== undefined &&
      name !== undefined && { credentialValid: () => market.apiKeyWorks(name, apiKey) }),
  }
  const reply = await market.idempotent(request, () => row.call(market, call), keptOf(row))
  if (reply instanceof Response || !('replayed' in reply)) return reply
  return {
    status: reply.status,
    body: reply.body,
    headers: { ...reply.headers, 'idempotent-replayed': 'true' },
  }
}

/**
 * A row that honours Idempotency-Key: a write kept by the host gets the header in its OpenAPI text, 409 among its
 * problems, and a call that replays. Every write runs as one write scope (a store fault after one of its writes landed
 * is an unknown outcome, not "nothing changed"), but a call the row says writes nothing (`scopeFree`); reads are unchanged. Every host serving the row gets the same
 * behaviour.
 */
export function withIdempotencyKey(row: RouteRow): RouteRow {
  if (row.method === 'GET') return row
  const scoped: RouteRow = {
    ...row,
    call: (market, call) =>
      row.scopeFree?.(call) ? row.call(market, call) : inWriteScope(() => row.call(market, call)),
  }
  if (!keptByHost(row)) return scoped
  return {
    ...scoped,
    headers: [...(row.headers ?? []), idempotencyHeader(row)],
    problems: [...new Set([...row.problems, 400, 409])].sort((a, b) => a - b),
    call: (market, call) => callOnce(scoped, market, call),
  }
}
