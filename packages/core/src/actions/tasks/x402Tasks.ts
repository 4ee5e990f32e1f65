import { MarketError } from '../../errors.ts'
import { type PaymentRequired, parseX402Payment } from '../../payments/X402.ts'
import { type TaskView, toTaskView } from '../../Task.ts'
import { type ActionContext, requireAgent } from '../context.ts'
import { requireTask } from './judging.ts'
import { notPending } from './refusals.ts'
import { payWithX402, x402Offer } from './x402Payment.ts'

/** How an x402 payment of a stored task ended: the task, paid or awaiting confirmations, or why it was refused. */
export type X402TaskPayment =
  | {
      paid: true
      task: TaskView
      receipt: { success: boolean; transaction: string; network: string; payer?: string }
    }
  | { paid: false; reason: string; required: PaymentRequired }

/** 503: this marketplace takes no x402 payments. */
const x402Unavailable = () =>
  new MarketError(
    'mpp_unavailable',
    503,
    'Machine payments unavailable',
    'This marketplace takes no x402 payments.',
  )

/** x402 for tasks already ordered (A2A's payment round): what to pay, and paying it. */
export function x402TaskActions(context: ActionContext) {
  const { config } = context
  /** The PaymentRequired of a task awaiting payment (x402 v2), `error` saying why it is asked again. */
  async function paymentRequiredOf(
    agentName: string,
    taskId: string,
    error?: string,
  ): Promise<PaymentRequired | null> {
    const settings = context.x402
    if (!settings) return null
    const task = await requireTask(context, await requireAgent(context, agentName), taskId)
    if (task.status !== 'pending_payment') return null
    const { requirements, resource } = x402Offer(context, settings, task)
    return {
      x402Version: 2,
      ...(error ? { error } : {}),
      resource: { ...resource, mimeType: 'application/json' },
      accepts: [requirements],
    }
  }
  return {
    /** What an x402 client pays for the task (null when it awaits no payment, or the market takes no x402). */
    x402PaymentRequired: (agentName: string, taskId: string) => paymentRequiredOf(agentName, taskId),

    /**
     * Pays a stored task awaiting payment with an x402 payment payload (as A2A's x402 extension carries it in
     * message metadata): paid or pending as payWithX402 says, or refused with the requirements to pay instead.
     * Throws 409 `authorization_already_used` for a spent authorization, `task_not_pending` for a task not awaiting.
     */
    async payTaskWithX402(agentName: string, taskId: string, payload: unknown): Promise<X402TaskPayment> {
      const settings = context.x402
      if (!settings) throw x402Unavailable()
      const task = await requireTask(context, await requireAgent(context, agentName), taskId)
      if (task.status !== 'pending_payment') throw notPending(task)
      const decoded = await parseX402Payment(payload)
      const outcome = decoded
        ? await payWithX402(context, settings, task, decoded, true)
        : ({ paid: false, reason: 'invalid_payload' } as const)
      if (!outcome.paid) {
        const required = await paymentRequiredOf(agentName, taskId, outcome.reason)
        if (!required) throw notPending(task)
        return { paid: false, reason: outcome.reason, required }
      }
      return { paid: true, task: toTaskView(outcome.task, config), receipt: outcome.settled }
    },
  }
}
