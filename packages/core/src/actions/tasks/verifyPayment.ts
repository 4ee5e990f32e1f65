import { ChainUnavailableError } from '../../errors.ts'
import { feedEvents } from '../../events.ts'
import type { AgentStore, KvStore, TaskStore, UserStore } from '../../ports/Store.ts'
import { VerifyPaymentInput } from '../../TaskInput.ts'
import { toTaskView } from '../../TaskView.ts'
import { parseInput } from '../../Validation.ts'
import { type ActionContext, requireAgent } from '../context.ts'
import { type TaskAnswer, taskAnswer } from './answers.ts'
import {
  checkOf,
  isSellersOwnClient,
  judge,
  payerProved,
  paymentOf,
  pendingVerification,
  requireTask,
} from './judging.ts'
import {
  CLAIM_CONFLICTS,
  expired,
  jobFundedBySeller,
  notPending,
  refusal,
  signatureInvalid,
  signatureRequired,
} from './refusals.ts'

/** The `verifyPayment` action (SPEC row 11). */
export function verifyPaymentAction(context: ActionContext<AgentStore & UserStore & TaskStore & KvStore>) {
  const { store, config, feed } = context
  /**
   * Verifies the on-chain payment of a task (SPEC row 11): `verified` (200), `pending` while not final (202, nothing
   * changes); 422 refused, 409 when the hash paid another task or the task is not awaiting payment, 503 when the
   * chain is down.
   */
  return async function verifyPayment(agentName: string, id: string, body: unknown): Promise<TaskAnswer> {
    const { tx_hash: txHash, payer_signature: signature } = parseInput(VerifyPaymentInput, body)
    const agent = await requireAgent(context, agentName)
    const task = await requireTask(context, agent, id)
    if (task.status === 'expired') throw expired(task)
    if (task.status !== 'pending_payment') throw notPending(task)
    if (!signature) throw signatureRequired()
    const usedBy = await store.findTaskIdByTxHash(txHash)
    if (usedBy && usedBy !== task.id) throw CLAIM_CONFLICTS.tx_already_used()
    const [verdict] = await judge(context, [checkOf(context, task, txHash)])
    if (!verdict) throw new ChainUnavailableError()
    if (!verdict.ok) {
      if (verdict.reason !== 'pending') throw refusal(verdict.reason)
      const { verification, retryAfterSeconds } = pendingVerification(verdict)
      return taskAnswer('pending', { body: verification, retryAfterSeconds })
    }
    if (verdict.job && (await isSellersOwnClient(context, agent, task, verdict.job.client)))
      throw jobFundedBySeller()
    if (!(await payerProved(context, task, txHash, signature, verdict.from, false)))
      throw signatureInvalid(verdict.from)
    const payment = paymentOf(context, verdict, txHash)
    const outcome = await store.markTaskPaid(task.id, payment, [
      feedEvents.taskPaid(task, txHash, payment.at),
    ])
    if (outcome === 'not_pending') {
      const current = await requireTask(context, agent, id)
      throw current.status === 'expired' ? expired(current) : notPending(current)
    }
    if (outcome !== 'paid') throw CLAIM_CONFLICTS[outcome]()
    feed.nudge()
    const paid = await requireTask(context, agent, id)
    return taskAnswer('verified', { body: { verified: true, task: toTaskView(paid, config) } })
  }
}
