import type { Hex } from 'viem'
import { ChainUnavailableError, idempotencyKeyReused } from '../../errors.ts'
import type { MppCharger, SignedTransfer } from '../../payments/Mpp.ts'
import type { ClaimTogether, ReplayClaim } from '../../payments/MppBroadcast.ts'
import type { KvWrite } from '../../ports/KvStore.ts'
import type { KvStore, TaskStore } from '../../ports/Store.ts'
import type { ActionContext } from '../context.ts'

/**
 * Which order an MPP credential pays, so that a buyer signing a new credential after a lost answer never pays twice:
 * its Idempotency-Key when it sent one, else the order itself (agent, skill, body), always scoped to its payer (the
 * signer of the transfer). As x402's order keys (x402Orders.ts).
 */
export type MppOrderKey = { key: string | null; fingerprint: string }

/** The first credential sent for an order: the market broadcast it (or was about to), and holds it to send again. */
export type MppOrderClaim = {
  reference: Hex
  authorization: string
  validBefore: number | null
  fingerprint: string
}

/**
 * A claim read for an order: its store key and the claim there (null when none), to replace only that one;
 * `required` unless it is the body's claim of an order with a key (which only helps a retry without the key).
 */
type SeenClaim = { key: string; seen: MppOrderClaim | null; required: boolean }

/** The store keys of an order, scoped to its payer and seller: its key's claim (with one), then its body's. */
function claimKeys(payer: Hex, agentName: string, order: MppOrderKey) {
  const scope = `mpp:order:${payer.toLowerCase()}:${agentName.toLowerCase()}`
  const body = `${scope}:body:${order.fingerprint}`
  return order.key === null ? { key: null, body } : { key: `${scope}:key:${order.key}`, body }
}

/**
 * True while an earlier claim still governs the order: with a key, whatever became of its payment unless its transfer
 * can never be mined unrecorded; without a key, only while unresolved (no task paid by it yet, and still minable).
 */
async function governs(
  context: ActionContext<TaskStore>,
  mpp: MppCharger,
  claim: MppOrderClaim,
  keyed: boolean,
): Promise<boolean> {
  if ((await context.store.findTaskIdByTxHash(claim.reference)) !== null) return keyed
  const expired = await mpp.expired(claim.reference, claim.validBefore).catch((error: unknown) => {
    throw new ChainUnavailableError(undefined, { cause: error })
  })
  return !expired
}

/**
 * The order's first credential when a new one (`transfer`) must not be broadcast in its place: the same payer sent
 * an earlier credential for this very order (see MppOrderKey) whose payment paid it, or is unknown and may still be
 * mined. The caller then uses that first credential (its one signed transfer is mined at most once). Otherwise the
 * claims to take for `transfer`. Throws 409 `idempotency_key_reused` for a key of another body.
 */
export async function earlierMppCredential(
  context: ActionContext<TaskStore & KvStore>,
  mpp: MppCharger,
  order: MppOrderKey,
  transfer: SignedTransfer,
  agentName: string,
): Promise<{ earlier: MppOrderClaim } | { claims: SeenClaim[] }> {
  const keys = claimKeys(transfer.payer, agentName, order)
  const read = async (key: string) => {
    const seen = (await context.store.kvGet(key)) as MppOrderClaim | null
    if (seen && seen.fingerprint !== order.fingerprint) throw idempotencyKeyReused()
    return seen
  }
  const later = (seen: MppOrderClaim | null): seen is MppOrderClaim =>
    seen !== null && seen.reference !== transfer.reference
  if (keys.key !== null) {
    const seen = await read(keys.key)
    if (later(seen) && (await governs(context, mpp, seen, true))) return { earlier: seen }
    // With a key, the body's claim belongs to whichever order of this body came last: only a retry without a key
    // reads it.
    const body = (await context.store.kvGet(keys.body)) as MppOrderClaim | null
    return {
      claims: [
        { key: keys.key, seen, required: true },
        { key: keys.body, seen: body, required: false },
      ],
    }
  }
  const seen = await read(keys.body)
  if (later(seen) && (await governs(context, mpp, seen, false))) return { earlier: seen }
  return { claims: [{ key: keys.body, seen, required: true }] }
}

/** True when the claim stored at an order key (`current`) may be replaced by `claim`: still the one read, or its own. */
function takes(current: MppOrderClaim | null, seen: MppOrderClaim | null, claim: MppOrderClaim): boolean {
  const unchanged = current === null ? seen === null : current.reference === seen?.reference
  return unchanged || current?.reference === claim.reference
}

/** What claiming an order did: `taken` (with the keys written, to give back when nothing is sent), or nothing. */
type MppOrderClaimed = { outcome: 'taken' | 'used' | 'conflict'; claimed: string[] }

/**
 * Claims the order for `authorization` (its transfer `transfer`) before it is broadcast, replacing only the claims
 * read before, in one write with the broadcast's replay claim of the transfer (`replay`, see withClaimTogether):
 * `conflict` when a racing credential of the same order claimed it meanwhile, `used` when the transfer's replay
 * marker is live; nothing is written then.
 */
function claimMppOrder(
  { store }: ActionContext<KvStore>,
  claims: SeenClaim[],
  order: MppOrderKey,
  transfer: SignedTransfer,
  authorization: string,
  replay: ReplayClaim | null,
): Promise<MppOrderClaimed> {
  const claim: MppOrderClaim = {
    reference: transfer.reference,
    authorization,
    validBefore: transfer.validBefore,
    fingerprint: order.fingerprint,
  }
  const keys = [...claims.map(({ key }) => key), ...(replay ? [replay.key] : [])]
  return store.kvUpdateAll<MppOrderClaimed>(keys, (current) => {
    const taken = claims.map(({ seen }, index) => takes(current[index] as MppOrderClaim | null, seen, claim))
    const none = (outcome: 'used' | 'conflict') => ({ writes: [], result: { outcome, claimed: [] } })
    if (claims.some(({ required }, index) => required && !taken[index])) return none('conflict')
    const marker = replay?.change(current[claims.length] ?? null)
    if (marker?.op === 'noop') return none('used')
    const writes: KvWrite[] = taken.map((take) => (take ? { op: 'set', value: claim } : { op: 'noop' }))
    if (marker) writes.push({ op: 'set', value: marker.value })
    const claimed = claims.filter((_, index) => taken[index]).map(({ key }) => key)
    return { writes, result: { outcome: 'taken', claimed } }
  })
}

/**
 * The claims of an order paid by a new credential, for its broadcast to take with its replay claim
 * (withClaimTogether): `claimed`, the keys written (to give back when nothing is sent), and `conflict`, true when a
 * racing credential of the same order had claimed it (the order answers 409 then).
 */
export function mppOrderClaims(
  context: ActionContext<KvStore>,
  claims: SeenClaim[],
  order: MppOrderKey,
  transfer: SignedTransfer,
  authorization: string,
) {
  const state = {
    claimed: [] as string[],
    conflict: false,
    take: (async (replay) => {
      const taken = await claimMppOrder(context, claims, order, transfer, authorization, replay)
      state.claimed.push(...taken.claimed)
      state.conflict = taken.outcome === 'conflict'
      return taken.outcome
    }) as ClaimTogether,
  }
  return state
}

/** Gives an order's claims back (its credential sent nothing, or was refused): the order may be paid again. */
export async function releaseMppOrder({ store }: Pick<ActionContext<KvStore>, 'store'>, claimed: string[]) {
  for (const key of claimed) await store.kvDelete(key)
}
