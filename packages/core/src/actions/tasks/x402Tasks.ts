import { ConflictError, MarketError } from '../../errors.ts'
import { type PaymentRequired, parseX402Payment, paymentRequired } from '../../payments/X402.ts'
import type { AgentStore, KvStore, TaskStore } from '../../ports/Store.ts'
import type { TaskRecord } from '../../Task.ts'
import { type TaskView, toTaskView } from '../../TaskView.ts'
import { type ActionContext, requireAgent } from '../context.ts'
import { requireTask } from './judging.ts'
import { notPending } from './refusals.ts'
import { claimOnce, payWithX402, x402Offer } from './x402Payment.ts'

/** How an x402 payment of a stored task ended: the task, paid or awaiting confirmations, or why it was refused. */
export type X402TaskPayment =
  | {
      paid: true
      task: TaskView
      receipt: { success: boolean; transaction: string; network: string; payer?: string }
    }
  | { paid: false; reason: string; required: PaymentRequired }

/** The key that holds one stored task's x402 payment while it is under way: one payment per task, across nodes. */
/** The kv key saying a stored task's x402 payment is under way; the re-check that ends its wait removes it. */
export const taskPaymentKey = (taskId: string) => `x402:task:${taskId}`

/** 409: a payment of this task is already on its way; paying again would pay twice. */
const paymentUnderWay = () =>
  new ConflictError(
    'task_not_pending',
    'A payment of this task is already on its way (being settled or waiting for its confirmations): poll the task; do not pay again.',
  )

/** 503: this marketplace takes no x402 payments. */
const x402Unavailable = () =>
  new MarketError(
    'mpp_unavailable',
    503,
    'Machine payments unavailable',
    'This marketplace takes no x402 payments.',
  )

/** x402 for tasks already ordered (A2A's payment round): what to pay, and paying it. */
export function x402TaskActions(context: ActionContext<AgentStore & TaskStore & KvStore>) {
  const { config } = context
  /**
   * The PaymentRequired of a task awaiting payment (x402 v2), `error` saying why it is asked again; `settling` while
   * a payment of it is on its way (a settlement or a transaction waiting for its confirmations): nothing more to pay.
   */
  async function paymentRequiredOf(
    agentName: string,
    taskId: string,
    error?: string,
  ): Promise<PaymentRequired | 'settling' | null> {
    const settings = context.x402
    if (!settings) return null
    const task = await requireTask(context, await requireAgent(context, agentName), taskId)
    if (task.status !== 'pending_payment') return null
    if (task.pendingCheck || (await context.store.kvGet(taskPaymentKey(task.id))) !== null) return 'settling'
    const { requirements, resource } = x402Offer(context, settings, task)
    return paymentRequired(requirements, resource, error)
  }
  /** A refusal that asks for the payment again (or, when one is under way meanwhile, says so). */
  async function refusedWith(agentName: string, taskId: string, task: TaskRecord, reason: string) {
    const required = await paymentRequiredOf(agentName, taskId, reason)
    if (required === 'settling') throw paymentUnderWay()
    if (!required) throw notPending(task)
    return { paid: false as const, reason, required }
  }
  return {
    /**
     * What an x402 client pays for the task: its PaymentRequired, `settling` while a payment is on its way, null
     * when it awaits no payment or the market takes no x402.
     */
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
      // A task already being paid (a check pending, or another x402 payment of it under way) takes no second payment.
      if (task.pendingCheck) throw paymentUnderWay()
      const decoded = await parseX402Payment(payload)
      if (!decoded) return refusedWith(agentName, taskId, task, 'invalid_payload')
      // One payment of a task at a time, across every process.
      if (!(await claimOnce(context, taskPaymentKey(task.id), true))) throw paymentUnderWay()
      const outcome = await payWithX402(context, settings, task, decoded, true).catch(
        async (error: unknown) => {
          await context.store.kvDelete(taskPaymentKey(task.id))
          throw error
        },
      )
      if (!outcome.paid) {
        // Refused (nothing sent, or sent and the chain shows nothing paid): the task may be paid again.
        await context.store.kvDelete(taskPaymentKey(task.id))
        return refusedWith(agentName, taskId, task, outcome.reason)
      }
      // Only an order's payment names an order key: a stored task's is one payment at a time (the claim above).
      if (outcome.paid === 'earlier') throw paymentUnderWay()
      // Paid now: the marker has nothing left to guard (the task is no longer pending). A payment still waiting for the
      // chain keeps it until its re-check ends (rechecks.ts).
      if (outcome.retryAfterSeconds === null)
        await context.store.kvDelete(taskPaymentKey(task.id)).catch(() => {})
      return { paid: true, task: toTaskView(outcome.task, config), receipt: outcome.settled }
    },
  }
}
