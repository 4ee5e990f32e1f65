import type { AgentStore, KvStore, StoreLifecycle, TaskStore, UserStore } from '../../ports/Store.ts'
import type { ActionContext } from '../context.ts'
import { completeTaskAction } from './completeTask.ts'
import { createTaskAction } from './createTask.ts'
import { jobFollowerActions } from './jobFollower.ts'
import { orderWithPaymentAction } from './orderWithPayment.ts'
import { paidOffersAction } from './paidOffers.ts'
import { ratingActions } from './rateTask.ts'
import { readTaskActions } from './readTasks.ts'
import { recheckActions } from './rechecks.ts'
import { refundTaskAction } from './refundTask.ts'
import { reviewTaskAction } from './reviewTask.ts'
import { threadActions } from './threads.ts'
import { verifyPaymentAction } from './verifyPayment.ts'
import { x402TaskActions } from './x402Tasks.ts'

export type { PaidOffer, PaidOfferPage } from '../../payments/PaymentInfo.ts'
export {
  answerHeaders,
  answerResponse,
  type PendingVerification,
  TASK_OUTCOME_STATUS,
  type TaskAnswer,
} from './answers.ts'
export type { OrderOptions } from './createTask.ts'
export { JOB_FOLLOWER_LOOKBACK_BLOCKS, JOB_FOLLOWER_MAX_BLOCKS, type JobFollowReport } from './jobFollower.ts'
export { jobSteps } from './jobSteps.ts'
export { PaidOfferQuery } from './paidOffers.ts'
export { RatingListInput, type RatingPage } from './rateTask.ts'
export type { TaskPage } from './readTasks.ts'
export type { RecheckReport } from './rechecks.ts'
export { type RefundAnswer, RefundInput } from './refundTask.ts'
export { THREAD_TASK_LIMIT, type ThreadTask } from './threads.ts'
export type { X402TaskPayment } from './x402Tasks.ts'

/** Orders, payments, delivery and the task lists: one action per file of this folder. */
export function taskActions(
  context: ActionContext<AgentStore & UserStore & TaskStore & KvStore & StoreLifecycle>,
) {
  return {
    /** A page of the skills sold by machine payment, with the cursor of the next (`paidOffers.ts`). */
    paidOffers: paidOffersAction(context),
    /** Orders a skill by machine payment: a 402 challenge, or the paid task with its receipt (SPEC row 12). */
    orderWithPayment: orderWithPaymentAction(context),
    /** Orders a skill: `created`, `awaiting_confirmations` or `replayed` (SPEC row 8). */
    createTask: createTaskAction(context),
    /** Verifies a task's on-chain payment: `verified` or `pending` (SPEC row 11). */
    verifyPayment: verifyPaymentAction(context),
    /** Delivers a paid task with its result URL (the seller's key). */
    completeTask: completeTaskAction(context),
    /** The seller's refund of a payment made outside the job escrow, checked on chain (a refund record). */
    recordRefund: refundTaskAction(context),
    /** The buyer's acceptance or rejection of a delivery, signed by its wallet. */
    reviewTask: reviewTaskAction(context),
    ...readTaskActions(context),
    ...ratingActions(context),
    ...recheckActions(context),
    ...jobFollowerActions(context),
    ...x402TaskActions(context),
    ...threadActions(context),
  }
}
