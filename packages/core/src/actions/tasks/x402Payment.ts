import { type Hex, isAddressEqual } from 'viem'
import { ConflictError } from '../../errors.ts'
import { feedEvents } from '../../events.ts'
import { formatAmount } from '../../Money.ts'
import type { Verdict } from '../../payments/Verifier.ts'
import {
  AUTHORIZATION_SLACK_SECONDS,
  acceptsOrder,
  authorizationKey,
  type Eip3009Authorization,
  type PaymentPayload,
  type PaymentRequirements,
  type SettleResponse,
  settlementKey,
  type X402Settings,
  x402Requirements,
} from '../../payments/X402.ts'
import type { ChainReader, PaymentReceipt } from '../../ports/Chain.ts'
import type { KvWrite } from '../../ports/KvStore.ts'
import type { KvStore, TaskStore } from '../../ports/Store.ts'
import type { TaskRecord } from '../../Task.ts'
import type { ActionContext, ActionPorts } from '../context.ts'
import { forgetAll } from '../kvRetention.ts'
import { eventsOfNewTask } from '../newTask.ts'
import { insertOrder, type OrderGuard, releaseHold } from './budgetGuard.ts'
import { checkOf, judge, paymentOf, pendingVerification } from './judging.ts'
import {
  claimWrites,
  isBodyClaim,
  type OrderClaims,
  paymentInProgress,
  readX402Order,
  releaseX402Order,
  type X402OrderKey,
} from './x402Orders.ts'

/** How long a settlement that did not reach its confirmations waits before the background re-check looks again. */
const FIRST_RECHECK_MS = 10_000

/** What one x402 order pays and where: the requirements, and the resource (the skill's paid path) they are for. */
export function x402Offer(context: ActionPorts, settings: X402Settings, task: TaskRecord) {
  return {
    requirements: x402Requirements(context.config, settings, {
      amountBaseUnits: task.priceBaseUnits,
      // A paid order of a seller without a wallet was refused when the task was made.
      payTo: task.payTo ?? '0x0000000000000000000000000000000000000000',
    }),
    resource: {
      url: `${context.config.baseUrl}/api/agents/${encodeURIComponent(task.agentName)}/tasks/${task.skillSlug}`,
      description: `${task.skillName} by ${task.agentName}: ${formatAmount(task.priceBaseUnits)} USDC`,
    },
  }
}

/**
 * An x402 payment's outcome: refused (a reason to ask again with), settled and the task paid or pending, or an
 * earlier payment of the same order (`earlier`: this authorization was not used).
 */
export type X402Outcome =
  | { paid: false; reason: string; settled?: SettleResponse }
  | { paid: true; task: TaskRecord; settled: SettleResponse; retryAfterSeconds: number | null }
  | { paid: 'earlier'; task: TaskRecord }

/** 409: the authorization paid an order already (or is being settled for one); nothing about that order is told. */
const authorizationUsed = () =>
  new ConflictError(
    'authorization_already_used',
    'This x402 authorization already paid for an order or is being settled; each authorization pays one order.',
  )

/**
 * Writes `value` under `key` if nothing is there yet, once across every process; false when it was taken. With
 * `until`, the store forgets it once that time has passed (a time past any date keeps it).
 */
export function claimOnce(
  { store }: Pick<ActionContext<KvStore>, 'store'>,
  key: string,
  value: unknown,
  until?: Date,
): Promise<boolean> {
  const expiry = until && Number.isFinite(until.getTime()) ? { expiresAt: until } : {}
  return store.kvUpdate(key, (current) =>
    current === null ? { op: 'set', value, result: true, ...expiry } : { op: 'noop', result: false },
  )
}

/**
 * Pays `task` (awaiting payment; `stored` says whether it is in the store yet) with an x402 `exact` payment: the
 * payload must accept the task's requirements and verify; with `order`, a retry of an order already paid or being paid
 * gets that task and uses nothing (see readX402Order). One store write then takes the order's claims and the
 * authorization's marker (a second use throws 409 `authorization_already_used`, across every process); the
 * settlement's hash is recorded with the task before the signed transaction is sent, so a crash leaves the payment to
 * the re-check; the task is `paid` once the chain shows the transfer with the market's confirmations, else it waits
 * for the re-check (`retryAfterSeconds`). A settlement that sent nothing gives every claim back (a 503 when the chain
 * failed).
 */
export async function payWithX402(
  context: ActionContext<TaskStore & KvStore>,
  settings: X402Settings,
  task: TaskRecord,
  decoded: { payload: PaymentPayload; authorization: Eip3009Authorization },
  stored: boolean,
  guard: OrderGuard = null,
  order: X402OrderKey | null = null,
): Promise<X402Outcome> {
  const { requirements } = x402Offer(context, settings, task)
  const { payload, authorization } = decoded
  if (!acceptsOrder(payload.accepted, requirements)) return { paid: false, reason: 'requirements_mismatch' }
  // The order named its buyer's wallet: only that wallet's money pays it.
  if (task.buyerWallet && !isAddressEqual(task.buyerWallet, authorization.from))
    return { paid: false, reason: 'wrong_payer' }
  // A spent authorization is told apart before the chain is asked (which would only say its nonce is used).
  const key = authorizationKey(authorization)
  if ((await context.store.kvGet(key)) !== null) throw authorizationUsed()
  // Checked against our requirements, not the payload's echo of them.
  const verified = await settings.facilitator.verify(payload, requirements)
  if (!verified.isValid) {
    // A racing request may have spent it meanwhile (the chain then says only "nonce used"): that is a 409 too.
    if ((await context.store.kvGet(key)) !== null) throw authorizationUsed()
    return { paid: false, reason: verified.invalidReason ?? 'invalid_payment' }
  }
  // Verified: the payer signed it, so it may learn of its own earlier payment of this order.
  const claims = order ? await readX402Order(context, order, authorization.from, task) : null
  if (claims && 'earlier' in claims) return { paid: 'earlier', task: claims.earlier }
  const taken = await takeClaims(context, authorization, claims, task.id)
  // A budgeted buyer's order holds its price before anything is sent: a refusal (403 budget_exceeded) gives the
  // claims back, leaving the authorization unused.
  const held = guard !== null && !stored
  if (held)
    await insertOrder(context, task, eventsOfNewTask(task), guard).catch(async (error: unknown) => {
      await forgetAll(context.store, taken.keys)
      throw error
    })
  /** Nothing was sent: every claim is given back, so the same payment (or the same order) may be tried again. */
  const unsent = async () => {
    if (held) await releaseHold(context, task)
    await forgetAll(context.store, taken.keys)
  }
  // The payer is the wallet the transfer must come from: the chain is judged against it, and it credits trust.
  const paying = { ...task, buyerWallet: authorization.from }
  const state: SettleState = { sent: null, fresh: [] }
  const offer = { payload, requirements, waits: taken.waits }
  const settled = await settle(context, settings, paying, offer, stored || held, state).catch(
    async (error: unknown): Promise<SettleResponse> => {
      // Once the settlement is recorded and sent, a failure to hear back is not a refusal: the chain decides below.
      if (state.sent === null) {
        await unsent()
        throw error
      }
      return {
        success: false,
        errorReason: 'settlement_unconfirmed',
        transaction: state.sent,
        network: requirements.network,
      }
    },
  )
  const { fresh, sent } = state
  if (sent === null) {
    // Nothing sent by us. The authorization may have been used meanwhile by another transaction, but one we did not
    // send cannot be told from another server's settlement of it for its own order (a buyer may hand one
    // authorization to several servers paying the same wallet): it pays nothing here.
    await unsent()
    return { paid: false, reason: settled.errorReason ?? 'settlement_failed', settled }
  }
  // Recorded and sent: whatever the facilitator heard (a timeout, an RPC error, a revert because another transaction
  // used the authorization first), the chain says whether the payer's money reached the seller for this order.
  const outcome = await settledOnChain(context, paying, { sent, nonce: authorization.nonce, fresh, taken })
  if (outcome.state === 'refused') {
    // The chain shows nothing paid: the order may be paid again.
    await releaseX402Order(context, taken.claimed)
    return {
      paid: false,
      reason: settled.errorReason ?? outcome.reason,
      settled: { ...settled, success: false },
    }
  }
  // Paid by the chain's word, whatever the facilitator heard: the receipt carries no error of its own.
  const { errorReason: _heard, ...heard } = settled
  const receipt = { ...heard, success: true, transaction: outcome.txHash, payer: authorization.from }
  if (outcome.state === 'pending')
    return { paid: true, settled: receipt, task: paying, retryAfterSeconds: outcome.retryAfterSeconds }
  return { paid: true, settled: receipt, task: outcome.task, retryAfterSeconds: null }
}

/**
 * What an x402 payment claimed before its settlement (takeClaims): every key written (`keys`, given back if nothing is
 * sent), the order's claims among them (`claimed`) and those that wait with the settlement's record (`waits`).
 */
type Taken = { keys: string[]; claimed: string[]; waits: string[] }

/** A settlement under way: the hash it recorded once sent, and the receipts the market's reader returned for it. */
type SettleState = { sent: Hex | null; fresh: PaymentReceipt[] }

/**
 * Takes, in one store write, the order's claims (`claims`) and the authorization's marker, which refuses the
 * authorization until the chain itself would (past validBefore). Throws 409 `task_not_pending` when the same order was
 * claimed meanwhile, `authorization_already_used` when the authorization was; then nothing is written.
 */
async function takeClaims(
  { store, clock }: ActionContext<KvStore>,
  authorization: Eip3009Authorization,
  claims: OrderClaims | null,
  taskId: string,
): Promise<Taken> {
  const orderKeys = claims?.keys.map(({ key }) => key) ?? []
  const marker = authorizationKey(authorization)
  const spentUntil = new Date((Number(authorization.validBefore) + AUTHORIZATION_SLACK_SECONDS) * 1000)
  const expiry = Number.isFinite(spentUntil.getTime()) ? { expiresAt: spentUntil } : {}
  const now = clock.now()
  const taken = await store.kvUpdateAll(
    [...orderKeys, marker],
    (current): { writes: KvWrite[]; result: Taken | 'claimed' | 'spent' } => {
      const writes = claims ? claimWrites(claims, current, now) : []
      if (writes === null) return { writes: [], result: 'claimed' }
      if (current[orderKeys.length] !== null) return { writes: [], result: 'spent' }
      const claimed = orderKeys.filter((_, index) => writes[index]?.op === 'set')
      const waits = claimed.filter(isBodyClaim)
      const taking: KvWrite = { op: 'set', value: { task: taskId }, ...expiry }
      return { writes: [...writes, taking], result: { keys: [...claimed, marker], claimed, waits } }
    },
  )
  if (taken === 'claimed') throw paymentInProgress()
  if (taken === 'spent') throw authorizationUsed()
  return taken
}

/**
 * Where a sent settlement stands: paid (the task marked, by our transaction or by another that used the same
 * authorization, found by its AuthorizationUsed log), pending (not mined or not final: the re-check goes on), or
 * refused (ours failed and nothing used the authorization).
 */
async function settledOnChain(
  context: ActionContext<TaskStore & KvStore>,
  task: TaskRecord,
  { sent, nonce, fresh, taken }: { sent: Hex; nonce: Hex; fresh: readonly PaymentReceipt[]; taken: Taken },
) {
  const { store, config, feed } = context
  const found = await paidBy(context, task, sent, nonce, fresh)
  if (found.verdict?.ok) {
    const payment = { ...paymentOf(context, found.verdict, found.txHash), method: 'x402' as const }
    const marked = await store.markTaskPaid(task.id, payment, [
      feedEvents.taskPaid(task, found.txHash, payment.at),
    ])
    if (marked === 'paid') {
      feed.nudge()
      // The record and the order's claims that waited with it served the wait for the chain (one write removes
      // them); the paid task's claim on the hash and the authorization marker guard replays. A delete that fails
      // leaves harmless rows, never turns the payment into an error.
      await forgetAll(store, [settlementKey(sent), ...taken.waits]).catch(() => {})
      const paid = { ...task, status: 'paid' as const, payment, pendingCheck: null }
      return { state: 'paid' as const, txHash: found.txHash, task: paid }
    }
  }
  if (found.verdict && !found.verdict.ok && found.verdict.reason !== 'pending')
    return { state: 'refused' as const, reason: found.verdict.reason }
  const pending = pendingVerification(
    found.verdict && !found.verdict.ok && found.verdict.reason === 'pending'
      ? found.verdict
      : { confirmations: 0, required: config.chain.minConfirmations },
  )
  return { state: 'pending' as const, txHash: found.txHash, retryAfterSeconds: pending.retryAfterSeconds }
}

/**
 * The transaction that paid an x402 order and the chain's verdict on it: our settlement `sent`, or (when it did not
 * pay) another transaction that used the same authorization. A chain that cannot be read gives no verdict. `fresh`:
 * receipts the market's chain reader returned moments ago (judge).
 */
export async function paidBy(
  context: ActionContext<KvStore>,
  task: TaskRecord,
  sent: Hex,
  nonce: Hex,
  fresh: readonly PaymentReceipt[] = [],
): Promise<{ txHash: Hex; verdict: Verdict | null }> {
  const [ours] = await judge(context, [checkOf(context, task, sent)], fresh).catch(() => [null])
  if (ours?.ok || !context.chain?.authorizationUses || !task.buyerWallet)
    return { txHash: sent, verdict: ours ?? null }
  // Judged as any payment (a re-check has only the recorded payer and nonce). Only after our own settlement was sent:
  // a front-runner of it and another server's settlement of the same authorization look alike (SECURITY.md).
  const uses = await context.chain
    .authorizationUses(context.config.chain.usdcContract, task.buyerWallet, nonce)
    .catch(() => [] as Hex[])
  const other = uses.find((hash) => hash.toLowerCase() !== sent.toLowerCase())
  if (!other) return { txHash: sent, verdict: ours ?? null }
  const [theirs] = await judge(context, [checkOf(context, task, other)]).catch(() => [null])
  return { txHash: other, verdict: theirs ?? null }
}

/**
 * The market's chain reader as lent to the facilitator for the settlement's receipt: each receipt it returns is kept
 * in `fresh` (only what this reader read, so nothing a facilitator says can be judged as the chain's).
 */
function keepingReceipts(chain: ChainReader, fresh: PaymentReceipt[]): Pick<ChainReader, 'receipts'> {
  return {
    async receipts(hashes, options) {
      const read = await chain.receipts(hashes, options)
      for (const receipt of read) if (receipt) fresh.push(receipt)
      return read
    },
  }
}

/**
 * Settles the payment, recording the settlement (its payer, nonce, validBefore and the order's claims that wait with
 * it, `waits`, removed when its re-check ends) and the task's pending check (storing a new task) before the
 * transaction is sent; `state` hears the hash sent and keeps the receipts the facilitator reads through the market's
 * chain reader.
 */
async function settle(
  context: ActionContext<TaskStore & KvStore>,
  settings: X402Settings,
  task: TaskRecord,
  offer: { payload: PaymentPayload; requirements: PaymentRequirements; waits: string[] },
  stored: boolean,
  state: SettleState,
): Promise<SettleResponse> {
  const { chain } = context
  const { payload, requirements, waits } = offer
  const { nonce, validBefore } = (payload.payload as { authorization: { nonce: Hex; validBefore: string } })
    .authorization
  const lent = chain ? keepingReceipts(chain, state.fresh) : undefined
  return settings.facilitator.settle(
    payload,
    requirements,
    async (txHash) => {
      await recordSettlement(context, task, txHash, { nonce, validBefore, waits }, stored)
      state.sent = txHash
    },
    lent,
  )
}

/**
 * Records `txHash` as the settlement of `task`'s authorization (its payer, nonce, validBefore and the order's claims
 * that wait with it) and the task's pending check (storing a new task), so that a crash leaves it to the re-check.
 */
async function recordSettlement(
  { store, clock }: ActionContext<TaskStore & KvStore>,
  task: TaskRecord,
  txHash: Hex,
  { nonce, validBefore, waits }: { nonce: Hex; validBefore: string; waits: string[] },
  stored: boolean,
): Promise<void> {
  task.pendingCheck = {
    txHash,
    signature: null,
    attempts: 0,
    nextAt: new Date(clock.now().getTime() + FIRST_RECHECK_MS),
  }
  // The record and the task are asked for in one turn, so a store that commits writes together (store-libsql's group
  // commit) lands them in one transaction and one sync; both are durable before anything is sent. Should the record
  // fail alone, the task's check of a hash never sent is dropped by its re-checks (no record: it may not land).
  const record = { payer: task.buyerWallet, nonce, validBefore, waits }
  const recorded = store.kvUpdateAll([settlementKey(txHash)], () => ({
    writes: [{ op: 'set', value: record }],
    result: undefined,
  }))
  const withTask = stored
    ? store.setPendingCheck(task.id, task.pendingCheck)
    : store.insertTask(task, eventsOfNewTask(task)).then((inserted) => {
        if (inserted.outcome !== 'inserted')
          throw new Error(`the task could not be stored (${inserted.outcome})`)
      })
  // Both ended before anything goes on: a failure gives the claims back only once neither write is under way.
  const failed = (await Promise.allSettled([recorded, withTask])).find((ended) => ended.status === 'rejected')
  if (failed) throw failed.reason
}

/**
 * True when the settlement `txHash` carries an authorization signed by `from` (recorded before it was sent): such a
 * transfer is the payer's own consent, so its re-check needs no separate payer signature.
 */
export async function x402SettlementBy({ store }: ActionContext<KvStore>, txHash: Hex, from: Hex) {
  const record = await x402Settlement({ store }, txHash)
  return record !== null && isAddressEqual(record.payer, from)
}

/**
 * The x402 settlement recorded under `txHash` (its payer, authorization nonce, and the unix second its authorization
 * stops being valid, when recorded), or null for any other hash.
 */
export async function x402Settlement({ store }: Pick<ActionContext<KvStore>, 'store'>, txHash: Hex) {
  const record = (await store.kvGet(settlementKey(txHash))) as {
    payer?: string
    nonce?: string
    validBefore?: string
    waits?: unknown[]
  } | null
  if (typeof record?.payer !== 'string') return null
  return {
    waits: Array.isArray(record.waits) ? record.waits.filter((key) => typeof key === 'string') : [],
    payer: record.payer as Hex,
    nonce: (record.nonce ?? null) as Hex | null,
    validBefore: record.validBefore === undefined ? null : Number(record.validBefore),
  }
}
