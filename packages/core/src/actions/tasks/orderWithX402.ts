import { MarketError } from '../../errors.ts'
import { problemResponse } from '../../http.ts'
import {
  decodeX402Payment,
  paymentRequiredHeader,
  paymentResponseHeader,
  type SettleResponse,
  X402_HEADERS,
  type X402Settings,
} from '../../payments/X402.ts'
import type { KvStore, TaskStore } from '../../ports/Store.ts'
import type { TaskRecord } from '../../Task.ts'
import { toTaskView } from '../../TaskView.ts'
import type { ActionContext, ActionPorts } from '../context.ts'
import type { OrderGuard } from './budgetGuard.ts'
import { pendingVerification } from './judging.ts'
import type { X402OrderKey } from './x402Orders.ts'
import { payWithX402, x402Offer } from './x402Payment.ts'

/**
 * A 402 problem (`error`) with the task's x402 offer in PAYMENT-REQUIRED (`reason`: why it is asked again, its
 * `error`) and, after a failed settlement, its PAYMENT-RESPONSE.
 */
export async function x402Problem(
  context: ActionPorts,
  settings: X402Settings,
  task: TaskRecord,
  request: Request,
  error: MarketError,
  options: { reason?: string; settled?: SettleResponse } = {},
): Promise<Response> {
  const { requirements, resource } = x402Offer(context, settings, task)
  const response = problemResponse(error, request, context.config.baseUrl)
  response.headers.set('cache-control', 'no-store')
  response.headers.set(
    X402_HEADERS.required,
    await paymentRequiredHeader(requirements, resource, options.reason),
  )
  if (options.settled)
    response.headers.set(X402_HEADERS.response, await paymentResponseHeader(options.settled))
  return response
}

/** A 402 problem that asks for an x402 payment again, saying why (`reason`, also in PAYMENT-REQUIRED's error). */
function refused(
  context: ActionPorts,
  settings: X402Settings,
  task: TaskRecord,
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
  return x402Problem(context, settings, task, request, error, { reason, settled })
}

/**
 * The answer for an order a retry finds paid or being paid (see claimX402Order): its task as it stands, 202 with
 * Retry-After and the settlement's hash while unresolved (never a new payment asked), 200 once decided.
 */
function earlierOrder(context: ActionPorts, task: TaskRecord): Response {
  const headers = { 'idempotent-replayed': 'true', 'cache-control': 'no-store' }
  const view = toTaskView(task, context.config)
  if (task.status !== 'pending_payment' || !task.pendingCheck)
    return Response.json(view, { status: 200, headers })
  const { verification, retryAfterSeconds } = pendingVerification({
    confirmations: 0,
    required: context.config.chain.minConfirmations,
  })
  return Response.json(
    { ...view, verification: { ...verification, rechecked: true, tx_hash: task.pendingCheck.txHash } },
    { status: 202, headers: { ...headers, 'retry-after': String(retryAfterSeconds) } },
  )
}

/**
 * Orders `task` (a paid order, not stored yet) paid by the x402 payment in the PAYMENT-SIGNATURE `header` (see
 * payWithX402; `order` names the order, so a retry gets the task of its earlier payment and pays nothing): 201 with
 * PAYMENT-RESPONSE once paid, 202 with Retry-After and the settlement's hash while its outcome is unknown, a 402
 * naming the reason when the payment does not pay this order; 403 budget_exceeded (nothing sent) past its buyer's
 * budget; 503 chain_unavailable (nothing sent) when the chain cannot be reached before the settlement is sent.
 */
export async function orderWithX402(
  context: ActionContext<TaskStore & KvStore>,
  settings: X402Settings,
  task: TaskRecord,
  request: Request,
  header: string,
  guard: OrderGuard,
  order: X402OrderKey,
): Promise<Response> {
  const { config } = context
  const decoded = await decodeX402Payment(header)
  if (!decoded) return refused(context, settings, task, request, 'invalid_payload')
  const outcome = await payWithX402(context, settings, task, decoded, false, guard, order)
  if (outcome.paid === 'earlier') return earlierOrder(context, outcome.task)
  if (!outcome.paid) return refused(context, settings, task, request, outcome.reason, outcome.settled)
  const receipt = { [X402_HEADERS.response]: await paymentResponseHeader(outcome.settled) }
  const view = toTaskView(outcome.task, config)
  if (outcome.retryAfterSeconds === null) return Response.json(view, { status: 201, headers: receipt })
  const { verification } = pendingVerification({ confirmations: 0, required: config.chain.minConfirmations })
  return Response.json(
    {
      ...view,
      verification: { ...verification, rechecked: true, tx_hash: outcome.task.pendingCheck?.txHash ?? null },
    },
    { status: 202, headers: { ...receipt, 'retry-after': String(outcome.retryAfterSeconds) } },
  )
}
