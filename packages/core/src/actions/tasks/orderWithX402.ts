import { type Hex, isAddressEqual } from 'viem'
import type { AgentRecord } from '../../Agent.ts'
import { ConflictError, MarketError, toProblem } from '../../errors.ts'
import { feedEvents } from '../../events.ts'
import { PROBLEM_MEDIA_TYPE } from '../../http.ts'
import { formatAmount } from '../../Money.ts'
import {
  acceptsOrder,
  authorizationKey,
  decodeX402Payment,
  type PaymentRequirements,
  paymentRequiredHeader,
  paymentResponseHeader,
  type SettleResponse,
  settlementKey,
  X402_HEADERS,
  type X402Settings,
  x402Requirements,
} from '../../payments/X402.ts'
import type { SkillRecord } from '../../Skill.ts'
import { type TaskRecord, toTaskView } from '../../Task.ts'
import type { ActionContext } from '../context.ts'
import { eventsOfNewTask } from '../newTask.ts'
import { checkOf, judge, paymentOf, pendingVerification } from './judging.ts'

/** How long a settlement that did not reach its confirmations waits before the background re-check looks again. */
const FIRST_RECHECK_MS = 10_000

/** What one x402 order pays and where: the requirements, and the resource they are for. */
export function x402Offer(
  context: ActionContext,
  settings: X402Settings,
  agent: AgentRecord,
  skill: SkillRecord,
  task: TaskRecord,
) {
  return {
    requirements: x402Requirements(context.config, settings, {
      amountBaseUnits: task.priceBaseUnits,
      // A paid order of a seller without a wallet was refused when the task was made.
      payTo: task.payTo ?? '0x0000000000000000000000000000000000000000',
    }),
    resource: {
      url: `${context.config.baseUrl}/api/agents/${encodeURIComponent(agent.name)}/tasks/${skill.slug}`,
      description: `${skill.name} by ${agent.name}: ${formatAmount(task.priceBaseUnits)} USDC`,
    },
  }
}

/** A 402 problem that asks for an x402 payment again, saying why (`reason`, also in PAYMENT-REQUIRED's error). */
async function refused(
  context: ActionContext,
  offer: ReturnType<typeof x402Offer>,
  request: Request,
  reason: string,
  settled?: SettleResponse,
): Promise<Response> {
  const error = new MarketError(
    'x402_payment_invalid',
    402,
    'Payment required',
    `The x402 payment does not pay this order (${reason}). Sign a new authorization for the requirements in the PAYMENT-REQUIRED header and send the same request again.`,
  )
  const headers = new Headers({
    'content-type': PROBLEM_MEDIA_TYPE,
    'cache-control': 'no-store',
    [X402_HEADERS.required]: await paymentRequiredHeader(offer.requirements, offer.resource, reason),
  })
  if (settled) headers.set(X402_HEADERS.response, await paymentResponseHeader(settled))
  const problem = toProblem(error, new URL(request.url).pathname, context.config.baseUrl)
  return new Response(JSON.stringify(problem), { status: 402, headers })
}

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
 * Orders `task` (a paid order of `skill`, not stored yet) paid by the x402 `exact` payment in `header`: the payload
 * must accept this order's requirements and verify; its authorization is claimed once across every process; the
 * task is stored with its settlement transaction's hash before that transaction is sent (a crash then leaves it to
 * the payment re-check), and is `paid` once the chain shows the transfer with the market's confirmations: 201 with
 * PAYMENT-RESPONSE, or 202 while confirmations are missing. A spent or refused payment gets a 402 naming why.
 */
export async function orderWithX402(
  context: ActionContext,
  settings: X402Settings,
  order: { agent: AgentRecord; skill: SkillRecord; task: TaskRecord },
  request: Request,
  header: string,
): Promise<Response> {
  const { task } = order
  const offer = x402Offer(context, settings, order.agent, order.skill, task)
  const decoded = await decodeX402Payment(header)
  if (!decoded) return refused(context, offer, request, 'invalid_payload')
  const { payload, authorization } = decoded
  if (!acceptsOrder(payload.accepted, offer.requirements))
    return refused(context, offer, request, 'requirements_mismatch')
  // A spent authorization is told apart before the chain is asked (which would only say its nonce is used).
  const key = authorizationKey(authorization)
  if ((await context.store.kvGet(key)) !== null) throw authorizationUsed()
  // Checked against our requirements, not the payload's echo of them.
  const verified = await settings.facilitator.verify(payload, offer.requirements)
  if (!verified.isValid) {
    // A racing request may have spent it meanwhile (the chain then says only "nonce used"): that is a 409 too.
    if ((await context.store.kvGet(key)) !== null) throw authorizationUsed()
    return refused(context, offer, request, verified.invalidReason ?? 'invalid_payment')
  }
  if (!(await claimAuthorization(context, key, task))) throw authorizationUsed()
  // The payer is the wallet the transfer must come from: the chain is judged against it, and it credits trust.
  task.buyerWallet = authorization.from
  const settled = await settle(context, settings, task, payload, offer.requirements)
  if (!settled.success)
    return refused(context, offer, request, settled.errorReason ?? 'settlement_failed', settled)
  return paidAnswer(context, task, settled)
}

/** The answer once the settlement is mined: paid (201), or waiting for confirmations or the chain reader (202). */
async function paidAnswer(
  context: ActionContext,
  task: TaskRecord,
  settled: SettleResponse,
): Promise<Response> {
  const { store, config, feed } = context
  const txHash = settled.transaction as Hex
  const receipt = { [X402_HEADERS.response]: await paymentResponseHeader(settled) }
  // The money has moved: a chain reader that cannot answer now leaves the task to the re-check, never to a 503.
  const [verdict] = await judge(context, [checkOf(context, task, txHash)]).catch(() => [null])
  if (verdict?.ok) {
    const payment = { ...paymentOf(context, verdict, txHash), method: 'x402' as const }
    const outcome = await store.markTaskPaid(task.id, payment, [
      feedEvents.taskPaid(task, txHash, payment.at),
    ])
    if (outcome === 'paid') {
      feed.nudge()
      const view = toTaskView({ ...task, status: 'paid', payment, pendingCheck: null }, config)
      return Response.json(view, { status: 201, headers: receipt })
    }
  }
  const pending = pendingVerification(
    verdict && !verdict.ok && verdict.reason === 'pending'
      ? verdict
      : { confirmations: 0, required: config.chain.minConfirmations },
  )
  const body = { ...toTaskView(task, config), verification: { ...pending.verification, rechecked: true } }
  return Response.json(body, {
    status: 202,
    headers: { ...receipt, 'retry-after': String(pending.retryAfterSeconds) },
  })
}

/** Settles the payment, storing the task (pending, with the settlement's hash to re-check) before it is sent. */
async function settle(
  context: ActionContext,
  settings: X402Settings,
  task: TaskRecord,
  payload: Parameters<X402Settings['facilitator']['settle']>[0],
  requirements: PaymentRequirements,
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
    const stored = await store.insertTask(task, eventsOfNewTask(task))
    if (stored.outcome !== 'inserted') throw new Error(`the task could not be stored (${stored.outcome})`)
  })
}

/**
 * True when the settlement `txHash` carries an authorization signed by `from` (recorded before it was sent): such a
 * transfer is the payer's own consent, so its re-check needs no separate payer signature.
 */
export async function x402SettlementBy({ store }: ActionContext, txHash: Hex, from: Hex) {
  const record = (await store.kvGet(settlementKey(txHash))) as { payer?: string } | null
  return typeof record?.payer === 'string' && isAddressEqual(record.payer as Hex, from)
}
