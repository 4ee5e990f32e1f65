import * as v from 'valibot'
import { ChainUnavailableError, ConflictError } from '../../errors.ts'
import { MAX_REASON_LENGTH, type TaskEntry } from '../../Job.ts'
import { judgeTransfer } from '../../payments/Verifier.ts'
import type { AgentStore, KvStore, TaskStore } from '../../ports/Store.ts'
import type { PaymentMethod } from '../../Task.ts'
import type { SellerTaskView } from '../../TaskView.ts'
import { TRUST_CREDITED_METHODS } from '../../Trust.ts'
import { boundedText, parseInput, strictFields } from '../../Validation.ts'
import { type ActionContext, authenticate } from '../context.ts'
import type { PendingVerification } from './answers.ts'
import { jobSteps } from './jobSteps.ts'
import { pendingVerification, refundKey, requireTask } from './judging.ts'
import { refusal } from './refusals.ts'
import { sellerView } from './sellerViews.ts'
import { claimOnce } from './x402Payment.ts'

/** Body of POST …/tasks/{id}/refund: the seller's refund transaction, and why. */
export const RefundInput = strictFields({
  tx_hash: v.pipe(
    v.string('must be a string'),
    v.regex(/^0x[0-9a-fA-F]{64}$/, 'must be a transaction hash: 0x and 64 hex digits'),
    v.toLowerCase(),
    v.transform((text) => text as `0x${string}`),
  ),
  reason: v.optional(boundedText(MAX_REASON_LENGTH)),
})

/** What recording a refund answers: the task with its record, or the transfer not final yet (nothing changed). */
export type RefundAnswer =
  | { state: 'recorded'; task: SellerTaskView }
  | { state: 'pending'; body: PendingVerification; retryAfterSeconds: number }

/**
 * Payments a seller refunds by a transfer the market can check: those paid on the payment chain by a known wallet,
 * but a job escrow's, which the contract refunds.
 */
const REFUNDABLE_METHODS: readonly PaymentMethod[] = TRUST_CREDITED_METHODS.filter(
  (method) => method !== 'job_escrow',
)

/** The `recordRefund` action: the seller's refund of a payment made outside the job escrow, checked on chain. */
export function refundTaskAction(context: ActionContext<AgentStore & TaskStore & KvStore>) {
  const { store, config, clock, feed } = context
  /**
   * Records a refund (seller's key, `{tx_hash, reason}`): a USDC transfer on the payment chain from the wallet the
   * task paid to the wallet that paid it, with the market's confirmations; each transaction refunds one task once.
   * Jobs in the job escrow are refunded by the contract (their records come from its events).
   */
  return async function recordRefund(
    agentName: string,
    id: string,
    apiKey: string | undefined,
    body: unknown,
  ): Promise<RefundAnswer> {
    const agent = await authenticate(context, agentName, apiKey)
    const input = parseInput(RefundInput, body)
    const task = await requireTask(context, agent, id)
    const payer = task.payment?.from
    if (!payer || !task.payTo || !task.payment || !REFUNDABLE_METHODS.includes(task.payment.method))
      throw new ConflictError(
        'refund_not_verifiable',
        'Only a payment made on the payment chain by a known wallet (transfer, escrow deposit, x402) can be refunded here; a job in the job escrow is refunded by the contract.',
      )
    if (!context.chain) throw new ChainUnavailableError('This marketplace has no payment chain configured.')
    const paidBy = task.payment?.txHash ?? null
    const [head, [receipt, payment]] = await Promise.all([
      context.chain.headBlock(),
      context.chain.receipts(paidBy ? [input.tx_hash, paidBy] : [input.tx_hash]),
    ])
    // Money that went back before it came is no refund of it.
    if (receipt && payment && receipt.blockNumber <= payment.blockNumber)
      throw new ConflictError(
        'refund_not_verifiable',
        `The transaction was mined in block ${receipt.blockNumber}, not after the payment's (${payment.blockNumber}): it cannot refund it.`,
      )
    const verdict = judgeTransfer(receipt ?? null, head, {
      token: config.chain.usdcContract,
      recipient: payer,
      sender: task.payTo,
      minAmount: 1n,
      minConfirmations: config.chain.minConfirmations,
    })
    if (!verdict.ok) {
      if (verdict.reason !== 'pending') throw refusal(verdict.reason)
      const { verification, retryAfterSeconds } = pendingVerification(verdict)
      return { state: 'pending', body: verification, retryAfterSeconds }
    }
    const key = refundKey(input.tx_hash)
    if (!(await claimOnce(context, key, { task: task.id })))
      throw new ConflictError('tx_already_used', 'This transaction already refunds a task.')
    // A transaction that paid an order is no refund (payments refuse refunds the same way: judging.ts).
    if (await store.findTaskIdByTxHash(input.tx_hash)) {
      await store.kvDelete(key)
      throw new ConflictError('tx_already_used', 'This transaction paid a task: it refunds nothing.')
    }
    const entry: TaskEntry = {
      kind: 'refund',
      by: 'seller',
      wallet: task.payTo,
      at: clock.now(),
      amountBaseUnits: verdict.amount,
      reason: input.reason ?? '',
      txHash: input.tx_hash,
    }
    if (!(await store.changeTask(jobSteps.refund(task, entry)))) {
      // The task moved meanwhile: the transaction stays free to record again.
      await store.kvDelete(key)
      throw new ConflictError(
        'task_not_paid',
        'The task changed while the refund was checked; send it again.',
      )
    }
    feed.nudge()
    return { state: 'recorded', task: await sellerView(context, await requireTask(context, agent, id)) }
  }
}
