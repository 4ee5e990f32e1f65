import { type Hex, isAddressEqual } from 'viem'
import { ConflictError } from '../../errors.ts'
import { feedEvents } from '../../events.ts'
import { formatAmount } from '../../Money.ts'
import {
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
import type { TaskRecord } from '../../Task.ts'
import type { ActionContext } from '../context.ts'
import { eventsOfNewTask } from '../newTask.ts'
import { checkOf, judge, paymentOf, pendingVerification } from './judging.ts'

/** How long a settlement that did not reach its confirmations waits before the background re-check looks again. */
const FIRST_RECHECK_MS = 10_000

/** What one x402 order pays and where: the requirements, and the resource (the skill's paid path) they are for. */
export function x402Offer(context: ActionContext, settings: X402Settings, task: TaskRecord) {
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

/** An x402 payment's outcome: refused (a reason to ask again with), or settled and the task paid or pending. */
export type X402Outcome =
  | { paid: false; reason: string; settled?: SettleResponse }
  | { paid: true; task: TaskRecord; settled: SettleResponse; retryAfterSeconds: number | null }

/** 409: the authorization paid an order already (or is being settled for one); nothing about that order is told. */
const authorizationUsed = () =>
  new ConflictError(
    'authorization_already_used',
    'This x402 authorization already paid for an order or is being settled; each authorization pays one order.',
  )

/** Claims an authorization for `task`, once across every process; false when another request holds it. */
async function claimAuthorization({ store }: ActionContext, key: string, task: TaskRecord) {
  return store.kvUpdate(key, (current) =>
    current === null ? { op: 'set', value: { task: task.id }, result: true } : { op: 'noop', result: false },
  )
}

/**
 * Pays `task` (awaiting payment; `stored` says whether it is in the store yet) with an x402 `exact` payment: the
 * payload must accept the task's requirements and verify; its authorization (payer, nonce) is claimed once across
 * every process (a second use throws 409 `authorization_already_used`); the settlement's hash is recorded with the
 * task before the signed transaction is sent, so a crash leaves the payment to the re-check; the task is `paid` once
 * the chain shows the transfer with the market's confirmations, else it waits for the re-check (`retryAfterSeconds`).
 */
export async function payWithX402(
  context: ActionContext,
  settings: X402Settings,
  task: TaskRecord,
  decoded: { payload: PaymentPayload; authorization: Eip3009Authorization },
  stored: boolean,
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
  if (!(await claimAuthorization(context, key, task))) throw authorizationUsed()
  // The payer is the wallet the transfer must come from: the chain is judged against it, and it credits trust.
  const paying = { ...task, buyerWallet: authorization.from }
  const settled = await settle(context, settings, paying, payload, requirements, stored)
  if (!settled.success) return { paid: false, reason: settled.errorReason ?? 'settlement_failed', settled }
  return { paid: true, settled, ...(await afterSettlement(context, paying, settled)) }
}

/** Settles the payment, recording the task's pending check (storing a new task) before the transaction is sent. */
async function settle(
  context: ActionContext,
  settings: X402Settings,
  task: TaskRecord,
  payload: PaymentPayload,
  requirements: PaymentRequirements,
  stored: boolean,
): Promise<SettleResponse> {
  const { store, clock } = context
  return settings.facilitator.settle(payload, requirements, async (txHash) => {
    task.pendingCheck = {
      txHash,
      signature: null,
      attempts: 0,
      nextAt: new Date(clock.now().getTime() + FIRST_RECHECK_MS),
    }
    await store.kvPut(settlementKey(txHash), { payer: task.buyerWallet })
    if (stored) return store.setPendingCheck(task.id, task.pendingCheck)
    const inserted = await store.insertTask(task, eventsOfNewTask(task))
    if (inserted.outcome !== 'inserted') throw new Error(`the task could not be stored (${inserted.outcome})`)
  })
}

/** Once the settlement is mined: the task paid, or (confirmations missing, chain unreadable) left to the re-check. */
async function afterSettlement(context: ActionContext, task: TaskRecord, settled: SettleResponse) {
  const { store, config, feed } = context
  const txHash = settled.transaction as Hex
  // The money has moved: a chain reader that cannot answer now leaves the task to the re-check, never to a 503.
  const [verdict] = await judge(context, [checkOf(context, task, txHash)]).catch(() => [null])
  if (verdict?.ok) {
    const payment = { ...paymentOf(context, verdict, txHash), method: 'x402' as const }
    const outcome = await store.markTaskPaid(task.id, payment, [
      feedEvents.taskPaid(task, txHash, payment.at),
    ])
    if (outcome === 'paid') {
      feed.nudge()
      return {
        task: { ...task, status: 'paid' as const, payment, pendingCheck: null },
        retryAfterSeconds: null,
      }
    }
  }
  const pending = pendingVerification(
    verdict && !verdict.ok && verdict.reason === 'pending'
      ? verdict
      : { confirmations: 0, required: config.chain.minConfirmations },
  )
  return { task, retryAfterSeconds: pending.retryAfterSeconds }
}

/**
 * True when the settlement `txHash` carries an authorization signed by `from` (recorded before it was sent): such a
 * transfer is the payer's own consent, so its re-check needs no separate payer signature.
 */
export async function x402SettlementBy({ store }: ActionContext, txHash: Hex, from: Hex) {
  const record = (await store.kvGet(settlementKey(txHash))) as { payer?: string } | null
  return typeof record?.payer === 'string' && isAddressEqual(record.payer as Hex, from)
}
