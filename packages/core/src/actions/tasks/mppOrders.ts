import type { Hex } from 'viem'
import { ChainUnavailableError, idempotencyKeyReused } from '../../errors.ts'
import type { MppCharger, SignedTransfer } from '../../payments/Mpp.ts'
import type { KvStore, TaskStore } from '../../ports/Store.ts'
import type { ActionContext } from '../context.ts'
import { paymentInProgress } from './x402Orders.ts'

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

/**
 * Claims the order for `authorization` (its transfer `transfer`) before it is broadcast, replacing only the claims
 * read before; throws 409 `task_not_pending` when a racing credential of the same order claimed it meanwhile.
 * Returns the keys claimed, to give back when nothing is sent.
 */
export async function claimMppOrder(
  { store }: ActionContext<KvStore>,
  claims: SeenClaim[],
  order: MppOrderKey,
  transfer: SignedTransfer,
  authorization: string,
): Promise<string[]> {
  const claim: MppOrderClaim = {
    reference: transfer.reference,
    authorization,
    validBefore: transfer.validBefore,
    fingerprint: order.fingerprint,
  }
  const claimed: string[] = []
  for (const { key, seen, required } of claims) {
    const taken = await store.kvUpdate(key, (stored) => {
      const current = stored as MppOrderClaim | null
      const unchanged = current === null ? seen === null : current.reference === seen?.reference
      return unchanged || current?.reference === claim.reference
        ? { op: 'set', value: claim, result: true }
        : { op: 'noop', result: false }
    })
    if (!taken && !required) continue
    if (!taken) {
      await releaseMppOrder({ store }, claimed)
      throw paymentInProgress()
    }
    claimed.push(key)
  }
  return claimed
}

/** Gives an order's claims back (its credential sent nothing, or was refused): the order may be paid again. */
export async function releaseMppOrder({ store }: Pick<ActionContext<KvStore>, 'store'>, claimed: string[]) {
  for (const key of claimed) await store.kvDelete(key)
}
