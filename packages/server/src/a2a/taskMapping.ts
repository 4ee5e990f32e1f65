import type { PaymentRequired, TaskView } from '@agentmarket/core'

/** The A2A task state of each marketplace task status (docs/a2a.md has the table and why). */
export const A2A_STATE_OF: Record<TaskView['status'], string> = {
  // Waiting for the buyer's payment: A2A's way to ask the client for more (the a2a-x402 extension uses it too).
  pending_payment: 'TASK_STATE_INPUT_REQUIRED',
  // Paid: the seller works on it.
  paid: 'TASK_STATE_WORKING',
  // Delivered and under the buyer's review: the result is there, the buyer may still reject it.
  delivered: 'TASK_STATE_COMPLETED',
  completed: 'TASK_STATE_COMPLETED',
  // The buyer rejected the delivery.
  rejected: 'TASK_STATE_FAILED',
  // Never paid in time: the order will not be worked on.
  expired: 'TASK_STATE_REJECTED',
}

/**
 * The A2A state of a task: A2A_STATE_OF, but a delivery whose result is revealed only after acceptance (it shows
 * `result_commitment` and no `result_url`) asks the buyer for its decision: there is no result yet to call completed.
 */
export function a2aStateOf(task: TaskView): string {
  return awaitsAcceptance(task) ? 'TASK_STATE_INPUT_REQUIRED' : A2A_STATE_OF[task.status]
}

/** A delivery under review whose result the seller reveals only once the buyer accepts (or silence does). */
const awaitsAcceptance = (task: TaskView) => task.status === 'delivered' && task.result_url === undefined

/** The a2a-x402 extension (v0.2): its URI and the message metadata keys of its payment round. */
export const A2A_X402 = {
  uri: 'https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2',
  status: 'x402.payment.status',
  required: 'x402.payment.required',
  payload: 'x402.payment.payload',
  receipts: 'x402.payment.receipts',
  error: 'x402.payment.error',
} as const

/** A message part on A2A's wire: text, or JSON data. */
type WirePart = { text: string; mediaType: string } | { data: unknown; mediaType: string }

const textPart = (text: string): WirePart => ({ text, mediaType: 'text/plain' })
const dataPart = (data: unknown): WirePart => ({ data, mediaType: 'application/json' })

/** What the status message says of each state, and what it carries. */
function statusMessage(
  task: TaskView,
  contextId: string,
  payment: PaymentRequired | null,
  extra: Record<string, unknown>,
  settling: boolean,
) {
  const parts: WirePart[] = []
  const metadata: Record<string, unknown> = { ...extra }
  if (task.status === 'pending_payment' && settling) {
    // Paid and on its way (being settled, or waiting for confirmations): nothing to pay, poll GetTask.
    parts.push(
      textPart('A payment of this task is on its way; it turns working once final. Do not pay again.'),
    )
  } else if (task.status === 'pending_payment') {
    parts.push(
      textPart(task.next_steps.pay),
      dataPart({ payment: task.payment, next_steps: task.next_steps }),
    )
    if (payment) {
      metadata[A2A_X402.status] ??= 'payment-required'
      metadata[A2A_X402.required] = payment
    }
  } else if (task.status === 'paid') parts.push(textPart(`Paid; ${task.agent} is working on it.`))
  else if (task.status === 'completed') parts.push(textPart(`Delivered: ${task.result_url ?? ''}`))
  else if (awaitsAcceptance(task))
    parts.push(
      textPart(
        `Delivered for review until ${task.review_until ?? ''}; the result is revealed once you accept (or silence does). ${task.next_steps.check_status}`,
      ),
      dataPart({
        result_commitment: task.result_commitment ?? null,
        review: task.review,
        next_steps: task.next_steps,
      }),
    )
  else if (task.status === 'delivered')
    parts.push(textPart(`Delivered for review until ${task.review_until ?? ''}: ${task.result_url ?? ''}`))
  else if (task.status === 'rejected') parts.push(textPart('The buyer rejected the delivery.'))
  else if (task.outcome === 'late')
    parts.push(textPart(`Not delivered by ${task.due_at ?? ''}; the buyer is owed a refund.`))
  else parts.push(textPart(`Expired unpaid at ${task.expires_at ?? ''}; order again to get a new task.`))
  return {
    messageId: `${task.task_id}:${task.status}`,
    contextId,
    taskId: task.task_id,
    role: 'ROLE_AGENT',
    parts,
    ...(Object.keys(metadata).length ? { metadata } : {}),
  }
}

/**
 * A marketplace task as an A2A 1.0 Task (wire JSON): its state (A2A_STATE_OF), a status message saying what to do
 * (the payment to make, with the a2a-x402 requirements when the market takes x402), the delivery as an artifact,
 * and the whole task view under `metadata.agentmarket`.
 */
export function a2aTaskOf(
  task: TaskView,
  contextId: string,
  options: { payment?: PaymentRequired | null; settling?: boolean; metadata?: Record<string, unknown> } = {},
) {
  const timestamp = task.completed_at ?? task.paid_at ?? task.created_at
  return {
    id: task.task_id,
    contextId,
    status: {
      state: a2aStateOf(task),
      message: statusMessage(
        task,
        contextId,
        options.payment ?? null,
        options.metadata ?? {},
        options.settling ?? false,
      ),
      timestamp,
    },
    artifacts: task.result_url
      ? [
          {
            artifactId: 'result',
            name: 'result',
            description: `The result of ${task.skill}`,
            parts: [{ url: task.result_url }, dataPart({ result_url: task.result_url })],
          },
        ]
      : [],
    metadata: { agentmarket: task },
  }
}
