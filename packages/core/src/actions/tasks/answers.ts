import type { TaskView } from '../../TaskView.ts'

/** The body of a 202: the payment is not final yet. */
export type PendingVerification = {
  verified: false
  state: 'pending'
  confirmations: number
  required: number
}

/** The HTTP status of each outcome of an order or a payment check: the one place outcomes meet HTTP. */
export const TASK_OUTCOME_STATUS = {
  created: 201,
  awaiting_confirmations: 202,
  verified: 200,
  pending: 202,
} as const

/**
 * What `createTask` and `verifyPayment` answer, by `outcome`: a task created (free, unpaid, or paid at once), created
 * with a payment not final yet, a payment verified, a payment still pending, or the stored first answer to a request
 * with the same Idempotency-Key. `status` is the outcome's (TASK_OUTCOME_STATUS; a replay keeps its first status);
 * hosts send `body` with it, and `Retry-After` when `retryAfterSeconds` is set.
 */
export type TaskAnswer =
  | { outcome: 'created'; status: 201; body: TaskView }
  | {
      outcome: 'awaiting_confirmations'
      status: 202
      body: TaskView & { verification: PendingVerification & { rechecked: boolean } }
      retryAfterSeconds: number
    }
  | { outcome: 'verified'; status: 200; body: { verified: true; task: TaskView } }
  | {
      outcome: 'pending'
      status: 202
      body: PendingVerification & { rechecked: boolean }
      retryAfterSeconds: number
    }
  | { outcome: 'replayed'; status: number; body: unknown; replayed: true }

/** The answer of one outcome, its status from the table. */
export function taskAnswer<Outcome extends keyof typeof TASK_OUTCOME_STATUS>(
  outcome: Outcome,
  fields: Omit<Extract<TaskAnswer, { outcome: Outcome }>, 'outcome' | 'status'>,
): Extract<TaskAnswer, { outcome: Outcome }> {
  return { outcome, status: TASK_OUTCOME_STATUS[outcome], ...fields } as Extract<
    TaskAnswer,
    { outcome: Outcome }
  >
}

/** The headers a task answer carries: `Retry-After` while a payment is not final, and whether it is a replay. */
export function answerHeaders(answer: TaskAnswer): Record<string, string> {
  const headers: Record<string, string> = {}
  if ('retryAfterSeconds' in answer) headers['retry-after'] = String(answer.retryAfterSeconds)
  if (answer.outcome === 'replayed') headers['idempotent-replayed'] = 'true'
  return headers
}

/** A task answer (createTask, verifyPayment) as a JSON response with its status and headers. */
export function answerResponse(answer: TaskAnswer): Response {
  return Response.json(answer.body, { status: answer.status, headers: answerHeaders(answer) })
}
