/**
 * The fair lease queue: how a background pass claims queued work so that no tenant (the seller or buyer whose work it
 * is) and no endpoint (where it goes) holds more than its share of the work in flight, and one tenant's backlog never
 * stands in front of another's. Every store claims by this policy; `pickFair` is its reference, which the memory
 * store runs and the SQL stores' claims are checked against (testing/fairQueueCases.ts).
 *
 * The policy, for the items due now, oldest due first:
 * 1. an endpoint takes at most `perEndpoint` in flight: its due items past that (counting those already leased) wait;
 * 2. a tenant takes at most `perTenant` in flight, counted the same way over what step 1 left;
 * 3. what is left is claimed round-robin across tenants: every tenant's oldest first, then every tenant's second,
 *    and so on (ties by due time, then id), at most `limit` in all.
 */

/** How much of a queue one claim takes, and how much one tenant and one endpoint may hold in flight at once. */
export type FairShare = {
  /** Items one claim takes at most. */
  limit: number
  /** Items one tenant may have in flight (leased, not settled) at once, over every process. */
  perTenant: number
  /** Items one endpoint may have in flight at once. */
  perEndpoint: number
}

/** A queued item as the fair claim sees it. */
export type FairItem = {
  id: string
  /** Whose work it is: deliveries of one tenant share its quota. */
  tenant: string
  /** Where it goes: deliveries to one endpoint share its quota. */
  endpoint: string
  /** When it is due (ms). */
  dueAt: number
}

/** What is in flight now: the tenant and endpoint of each item leased and not settled. */
export type FairInFlight = Pick<FairItem, 'tenant' | 'endpoint'>

/** Webhook deliveries: 20 claimed a pass; a seller holds at most 10 attempts in flight, an endpoint 4. */
export const WEBHOOK_FAIR_SHARE: FairShare = { limit: 20, perTenant: 10, perEndpoint: 4 }

/**
 * Outgoing mail (tenant: the recipient's address, endpoint: its domain, OrderMail.ts mailQueueKeys): 10 sends a
 * pass; one recipient holds at most 2 in flight, one domain 4, so a domain whose mail hangs holds 4 sends, not all.
 */
export const MAIL_FAIR_SHARE: FairShare = { limit: 10, perTenant: 2, perEndpoint: 4 }

/**
 * Payment re-checks (tenant: the seller, endpoint: the client that ordered, Task.ts recheckQueueKeys): 100 a pass;
 * one seller's orders take at most 50 of them, one client's 10 (as many as it may have, MAX_RECHECKS_PER_CLIENT).
 */
export const RECHECK_FAIR_SHARE: FairShare = { limit: 100, perTenant: 50, perEndpoint: 10 }

const byDue = (a: FairItem, b: FairItem) => a.dueAt - b.dueAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** Counts of `key` over `items`. */
function countBy<T>(items: T[], key: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>()
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1)
  return counts
}

/** The items (in `due`'s order) whose rank under `key`, after what `busy` already holds, is within `max`. */
function withinQuota(
  due: FairItem[],
  busy: Map<string, number>,
  key: (item: FairItem) => string,
  max: number,
): { item: FairItem; rank: number }[] {
  const seen = new Map<string, number>()
  const kept: { item: FairItem; rank: number }[] = []
  for (const item of due) {
    const rank = (seen.get(key(item)) ?? 0) + 1
    seen.set(key(item), rank)
    if (rank + (busy.get(key(item)) ?? 0) <= max) kept.push({ item, rank })
  }
  return kept
}

/**
 * The ids a fair claim takes from `due` (items due now), given what is `inFlight`, under `share`: per-endpoint and
 * per-tenant quotas, then round-robin across tenants (module comment). The reference every store's claim follows.
 */
export function pickFair(due: FairItem[], inFlight: FairInFlight[], share: FairShare): string[] {
  const oldestFirst = [...due].sort(byDue)
  const endpointsFree = withinQuota(
    oldestFirst,
    countBy(inFlight, (item) => item.endpoint),
    (item) => item.endpoint,
    share.perEndpoint,
  ).map(({ item }) => item)
  const tenantsFree = withinQuota(
    endpointsFree,
    countBy(inFlight, (item) => item.tenant),
    (item) => item.tenant,
    share.perTenant,
  )
  return tenantsFree
    .sort((a, b) => a.rank - b.rank || byDue(a.item, b.item))
    .slice(0, share.limit)
    .map(({ item }) => item.id)
}

/** A pending item (neither done nor given up) as a store holds it: its fair item and the end of its lease, if any. */
export type FairQueued = FairItem & { leasedUntil: number | null }

/**
 * The ids a fair claim at `now` (ms) takes from `pending`: pickFair over those due, given those leased past `now`.
 * The memory store's claims, and the model the conformance cases check the SQL stores' claims against.
 */
export function claimFair(pending: FairQueued[], now: number, share: FairShare): string[] {
  const inFlight = pending.filter((item) => (item.leasedUntil ?? 0) > now)
  return pickFair(
    pending.filter((item) => item.dueAt <= now),
    inFlight,
    share,
  )
}
