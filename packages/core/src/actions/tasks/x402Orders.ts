import type { Hex } from 'viem'
import { ConflictError, idempotencyKeyReused } from '../../errors.ts'
import type { KvWrite } from '../../ports/KvStore.ts'
import type { KvStore, TaskStore } from '../../ports/Store.ts'
import type { TaskRecord } from '../../Task.ts'
import type { ActionContext } from '../context.ts'
import { IDEMPOTENCY_TTL_MS } from '../idempotency.ts'
import { forgetAll } from '../kvRetention.ts'

/**
 * Which order an x402 payment is for, so that a client retrying it never pays twice: its Idempotency-Key when it
 * sent one (`explicit`), else the order itself (agent, skill, body) while an earlier payment of it is unresolved.
 */
export type X402OrderKey = { key: string | null; fingerprint: string }

/** An order's claim: its task, and when it was claimed (a claim whose task was never stored goes stale). */
type OrderClaim = { taskId: string; fingerprint: string; at: number }

/** How long a claim whose task was never stored holds (the settlement stopped before its record). */
const UNRECORDED_CLAIM_MS = 120_000

/**
 * 409 `task_not_pending` (as A2A answers a task being paid): the same order is being paid right now (its settlement
 * not yet recorded); retry shortly, do not pay again.
 */
export const paymentInProgress = () =>
  new ConflictError(
    'task_not_pending',
    'A payment of this very order is being settled right now. Retry shortly with the same Idempotency-Key (or the same order): you get its task; do not pay again.',
  )

/** The store keys of an order, scoped to its payer (a fresh authorization it signed proves it is that payer). */
function claimKeys(payer: Hex, agentName: string, order: X402OrderKey) {
  const scope = `x402:order:${payer.toLowerCase()}:${agentName.toLowerCase()}`
  return {
    body: `${scope}:body:${order.fingerprint}`,
    key: order.key === null ? null : `${scope}:key:${order.key}`,
  }
}

/** True while a task's payment is sent and unresolved: a settlement recorded, its check not done. */
const unresolved = (task: TaskRecord) => task.status === 'pending_payment' && task.pendingCheck !== null

/** Reads a claim: the earlier task it names when `matters` says it answers this order, a stale or empty claim. */
async function readClaim(
  context: ActionContext<TaskStore & KvStore>,
  key: string,
  order: X402OrderKey,
  agentName: string,
  matters: (task: TaskRecord) => boolean,
): Promise<{ earlier: TaskRecord } | { current: OrderClaim | null }> {
  const { store, clock } = context
  const current = (await store.kvGet(key)) as OrderClaim | null
  if (!current) return { current }
  if (current.fingerprint !== order.fingerprint) throw idempotencyKeyReused()
  const earlier = await store.getTask(agentName, current.taskId)
  if (earlier && matters(earlier)) return { earlier }
  if (!earlier && clock.now().getTime() - current.at < UNRECORDED_CLAIM_MS) throw paymentInProgress()
  return { current }
}

/**
 * An order's claims to take at its settlement's broadcast: each key, the claim it held when read (`seen`: nothing, or
 * a stale claim), and whether the order needs it (`needed`: a body claim another keyed order of the same body holds
 * is not). Taken in one write with the authorization's marker (claimWrites).
 */
export type OrderClaims = {
  claim: OrderClaim
  keys: { key: string; seen: OrderClaim | null; needed: boolean }[]
}

/**
 * Reads `order`'s claims for `task` (paid by `payer`), or gives the task of an earlier payment of the same order: with
 * an Idempotency-Key, the key's task whatever became of it (distinct keys are distinct orders); without one, the same
 * order's task while its payment is unresolved (after that, the same body again is a new order). Throws 409
 * `idempotency_key_reused` for a key of another body, `task_not_pending` while the earlier payment is not yet
 * recorded. Nothing is written: the claims are taken with the authorization's marker (claimWrites).
 */
export async function readX402Order(
  context: ActionContext<TaskStore & KvStore>,
  order: X402OrderKey,
  payer: Hex,
  task: TaskRecord,
): Promise<OrderClaims | { earlier: TaskRecord }> {
  const keys = claimKeys(payer, task.agentName, order)
  const claim: OrderClaim = {
    taskId: task.id,
    fingerprint: order.fingerprint,
    at: context.clock.now().getTime(),
  }
  const claims: OrderClaims = { claim, keys: [] }
  if (keys.key !== null) {
    const read = await readClaim(context, keys.key, order, task.agentName, () => true)
    if ('earlier' in read) return read
    claims.keys.push({ key: keys.key, seen: read.current, needed: true })
  }
  // The body's claim lets a retry without the key find this payment; only a retry without a key reads it.
  const body = await readClaim(context, keys.body, order, task.agentName, (earlier) =>
    keys.key === null ? unresolved(earlier) : false,
  ).catch(async (error: unknown) => {
    if (keys.key !== null) return { current: null }
    throw error
  })
  if ('earlier' in body) return body
  // With a key, another order of the same body may hold the body's claim: this one is still its own order.
  claims.keys.push({ key: keys.body, seen: body.current, needed: keys.key === null })
  return claims
}

/**
 * The writes that take `claims` given each key's `current` value (in `claims.keys`' order): a key still holding
 * what was read gets this order's claim (an Idempotency-Key's for the key's 24 hours, the body's while its payment
 * waits), one the order can do without is left alone; null when a needed key moved on (the same order is being paid).
 */
export function claimWrites(claims: OrderClaims, current: readonly unknown[], now: Date): KvWrite[] | null {
  const writes: KvWrite[] = []
  for (const [index, { key, seen, needed }] of claims.keys.entries()) {
    const stored = (current[index] ?? null) as OrderClaim | null
    const still = stored === null ? seen === null : seen !== null && stored.taskId === seen.taskId
    if (!still && needed) return null
    if (!still) writes.push({ op: 'noop' })
    else if (isBodyClaim(key)) writes.push({ op: 'set', value: claims.claim })
    else
      writes.push({ op: 'set', value: claims.claim, expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS) })
  }
  return writes
}

/** True for the claim of an order's body (read by retries without a key while its payment is unresolved). */
export const isBodyClaim = (key: string) => /^x402:order:[^:]+:[^:]+:body:/.test(key)

/**
 * Gives an order's claims back (its payment sent nothing, or paid nothing), in one store write: the same order may be
 * paid again.
 */
export function releaseX402Order(
  { store }: Pick<ActionContext<KvStore>, 'store'>,
  claimed: readonly string[],
): Promise<void> {
  return forgetAll(store, claimed)
}
