import { ConflictError, InvalidInputError, PaymentRefusedError } from '../../errors.ts'
import { DEFAULT_JOB_SECONDS } from '../../Job.ts'
import { ESCROW_DEADLINE_SLACK_SECONDS } from '../../payments/Escrow.ts'
import type { RefusalReason } from '../../payments/Verifier.ts'
import type { TaskRecord } from '../../Task.ts'

const REFUSAL_DETAILS: Record<RefusalReason, string> = {
  reverted: 'The transaction reverted on chain; it moved no USDC.',
  wrong_token: 'The transaction moved no USDC of the configured USDC contract.',
  wrong_recipient: "The USDC did not go to the seller's wallet shown in payment.to.",
  amount_mismatch: 'The USDC sent is less than the price of the skill.',
  wrong_sender: 'The USDC did not come from the buyer_wallet given when the task was created.',
  not_an_escrow_deposit: 'The transaction touches the escrow contract but is not a funded deposit.',
  escrow_deadline_too_late: `The deposit's slaDeadline is too late: the seller can claim a deposit only after it, so it must be no later than the moment the market verifies the deposit plus the skill's sla_seconds (${DEFAULT_JOB_SECONDS} without one) plus ${ESCROW_DEADLINE_SLACK_SECONDS} seconds. Set slaDeadline to the unix time you send the deposit plus sla_seconds (next_steps.pay shows it), deposit again and verify that one.`,
  tx_is_a_refund:
    'This transaction is recorded as the refund of a task: money going back to a buyer pays no order.',
  job_not_funded:
    "The job this funding made is no longer funded on the job escrow: its seller submitted on it before the market saw the funding, or it was decided or refunded. It pays no task. If the seller submitted, the job's evaluator (the buyer, with the offered call) can send reject(key, reason) within the review window to get the budget back; silence past it pays the seller (claimPayment). A refunded job's money is back with its client; order again to buy.",
  job_terms_mismatch:
    "The job escrow funding's terms are not the task's: reviewWindow must equal review_seconds, and deliverBy must leave at least the skill's sla_seconds (24 hours without one) from now, when the market would mark the task paid (escrow_job.calls has a fund call that does, with an hour to spare: verify soon after funding). This funding pays no task: at deliverBy anyone may send claimRefund to return it to its client; order again to buy.",
}

/** 422: the chain shows a payment that does not pay this task, and why. */
export const refusal = (reason: RefusalReason) => new PaymentRefusedError(reason, REFUSAL_DETAILS[reason])

/** 422: a job funded by the seller's own wallet (the wallet the task pays, or its owner's) pays no order. */
export const jobFundedBySeller = () =>
  new PaymentRefusedError(
    'job_funded_by_seller',
    "The job was funded by the seller's own wallet (the wallet the task pays, or its owner's): a seller cannot be its buyer's client and name the evaluator. Fund with the buyer's wallet and sign payment.payer_proof with it.",
  )

/** 409s of a payment another task already claimed. */
export const CLAIM_CONFLICTS = {
  tx_already_used: () => new ConflictError('tx_already_used', 'This transaction already paid another task.'),
  escrow_task_id_used: () =>
    new ConflictError('escrow_task_id_used', 'The escrow deposit of this taskId already paid another task.'),
}

/** 409: the task is not awaiting payment. */
export const notPending = (task: TaskRecord) =>
  new ConflictError(
    'task_not_pending',
    `The task is ${task.status}; only a pending_payment task can be paid.`,
  )

/** 409: the task expired unpaid. */
export const expired = (task: TaskRecord) =>
  new ConflictError(
    'task_expired',
    `The task expired unpaid at ${task.expiresAt?.toISOString()}; order again to get a new task.`,
  )

const SIGNATURE_HOW =
  'Sign the EIP-712 typed data in payment.payer_proof (the task\'s, or commerce.payer_proof of the agent card when paying before ordering, with task "") with the wallet that paid, message.txHash set to your transaction hash, and send it as payer_signature.'

/** 400: a tx hash sent without the payer's signature. */
export const signatureRequired = () =>
  new InvalidInputError(
    'payer_signature_required',
    `A payment needs payer_signature: proof by the paying wallet that this payment is for this task. ${SIGNATURE_HOW}`,
    [
      {
        pointer: '/payer_signature',
        detail: 'required with tx_hash: an EIP-712 signature by the paying wallet',
      },
    ],
  )

/** 422: the signature is not the paying wallet's for this task. */
export const signatureInvalid = (from: string) =>
  new PaymentRefusedError(
    'payer_signature_invalid',
    `payer_signature is not a signature of this task's payer_proof by ${from}, the wallet that paid. ${SIGNATURE_HOW}`,
  )
