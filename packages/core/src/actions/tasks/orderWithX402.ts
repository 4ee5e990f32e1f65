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
 * Orders `task` (a paid order, not stored yet) paid by the x402 payment in the PAYMENT-SIGNATURE `header` (see
 * payWithX402): 201 with PAYMENT-RESPONSE once paid, 202 with Retry-After while confirmations are missing, a 402
 * naming the reason when the payment does not pay this order; 403 budget_exceeded (nothing sent) past its buyer's budget.
 */
export async function orderWithX402(
  context: ActionContext<TaskStore & KvStore>,
  settings: X402Settings,
  task: TaskRecord,
  request: Request,
  header: string,
  guard: OrderGuard,
): Promise<Response> {
  const { config } = context
  const decoded = await decodeX402Payment(header)
  if (!decoded) return refused(context, settings, task, request, 'invalid_payload')
  const outcome = await payWithX402(context, settings, task, decoded, false, guard)
  if (!outcome.paid) return refused(context, settings, task, request, outcome.reason, outcome.settled)
  const receipt = { [X402_HEADERS.response]: await paymentResponseHeader(outcome.settled) }
  const view = toTaskView(outcome.task, config)
  if (outcome.retryAfterSeconds === null) return Response.json(view, { status: 201, headers: receipt })
  const { verification } = pendingVerification({ confirmations: 0, required: config.chain.minConfirmations })
  return Response.json(
    { ...view, verification: { ...verification, rechecked: true } },
    { status: 202, headers: { ...receipt, 'retry-after': String(outcome.retryAfterSeconds) } },
  )
}
