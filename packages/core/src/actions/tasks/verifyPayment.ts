import type { Hex } from 'viem'
import { ChainUnavailableError } from '../../errors.ts'
import { feedEvents } from '../../events.ts'
import { recheckDelayMs } from '../../PaymentRechecks.ts'
import type { AgentStore, KvStore, TaskStore, UserStore } from '../../ports/Store.ts'
import { paymentTxHash, type TaskRecord } from '../../Task.ts'
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
import { withinRecheckBudget } from './rechecks.ts'
import {
  CLAIM_CONFLICTS,
  expired,
  jobFundedBySeller,
  notPending,
  refusal,
  signatureInvalid,
  signatureRequired,
} from './refusals.ts'

/** The 503 detail when the chain is down but the hash sent is kept for the background re-check. */
const CHAIN_DOWN_HASH_KEPT =
  'The payment chain cannot be reached right now. Your transaction hash is kept: the market re-checks it in the background and marks the task paid once the payment is final. Do not pay again; read the task or verify again after Retry-After.'

/**
 * Keeps `txHash` (with the payer's signature) as the task's background re-check, within its client's budget: true
 * when it is kept. A hash already kept stays as it is (its attempts are not reset by retries).
 */
async function keepForRecheck(
  context: ActionContext<TaskStore>,
  task: TaskRecord,
  txHash: Hex,
  signature: Hex,
): Promise<boolean> {
  const { store, clock } = context
  if (!context.chain) return false
  if (task.pendingCheck?.txHash.toLowerCase() === txHash.toLowerCase()) return true
  // Replacing the task's own check does not add one to its client's count.
  if (!task.pendingCheck && !(await withinRecheckBudget(context, task.clientKey))) return false
  const nextAt = new Date(clock.now().getTime() + recheckDelayMs(0))
  await store.setPendingCheck(task.id, { txHash, signature, attempts: 0, nextAt })
  return true
}

/** The `verifyPayment` action (SPEC row 11). */
export function verifyPaymentAction(context: ActionContext<AgentStore & UserStore & TaskStore & KvStore>) {
  const { store, config, feed } = context
  /**
   * Verifies the on-chain payment of a task (SPEC row 11): `verified` (200), `pending` while not final (202; the hash
   * is kept for the background re-check within the client's budget); 422 refused, 409 when the hash paid another task
   * or the task is not awaiting payment, 503 when the chain is down (the hash kept all the same).
   */
  return async function verifyPayment(agentName: string, id: string, body: unknown): Promise<TaskAnswer> {
    const { tx_hash: txHash, payer_signature: signature } = parseInput(VerifyPaymentInput, body)
    const agent = await requireAgent(context, agentName)
    const task = await requireTask(context, agent, id)
    if (task.status === 'expired') throw expired(task)
    // The same hash again on a task it paid (a retry whose 200 was lost, or a hash the re-check settled since its 202):
    // the answer the first call got or would have got. The task's id already lets its holder read all of it.
    // A job's funding is its payment's transaction too (a job claims its key, not its hash: see paymentTxHash).
    if (paymentTxHash(task.payment)?.toLowerCase() === txHash.toLowerCase())
      return taskAnswer('verified', { body: { verified: true, task: toTaskView(task, config) } })
    if (task.status !== 'pending_payment') throw notPending(task)
    if (!signature) throw signatureRequired()
    const usedBy = await store.findTaskIdByTxHash(txHash)
    if (usedBy && usedBy !== task.id) throw CLAIM_CONFLICTS.tx_already_used()
    const [verdict] = await judge(context, [checkOf(context, task, txHash)]).catch(async (error: unknown) => {
      // The payment may have landed: its hash is kept and re-checked, so the buyer is never asked to pay again.
      if (error instanceof ChainUnavailableError && (await keepForRecheck(context, task, txHash, signature)))
        throw new ChainUnavailableError(CHAIN_DOWN_HASH_KEPT, { cause: error.cause ?? error })
      throw error
    })
    if (!verdict) throw new ChainUnavailableError()
    if (!verdict.ok) {
      if (verdict.reason !== 'pending') throw refusal(verdict.reason)
      const rechecked = await keepForRecheck(context, task, txHash, signature)
      const { verification, retryAfterSeconds } = pendingVerification(verdict)
      return taskAnswer('pending', { body: { ...verification, rechecked }, retryAfterSeconds })
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
