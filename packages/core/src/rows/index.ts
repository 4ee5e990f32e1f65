// @agentmarket/core/rows, for store authors: the rows both SQL stores keep, the function that reads or writes each
// record as a row, and the rules a Store computes the same way in every store (trust, liveness, budgets, orders).

export { nameKey } from '../Agent.ts'
export { compareByActivity } from '../AgentSearch.ts'
export { passesCap } from '../Budget.ts'
export { entryToJson, refundedBaseUnits } from '../Job.ts'
export { lastSeenRange, livenessChangesAt } from '../Liveness.ts'
export type { JobCounts } from '../ports/Store.ts'
export { afterEachWrite, STORE_READ_METHODS, STORE_UNSHOWN_WRITES } from '../ports/storeReads.ts'
export { spendTokens } from '../RateLimit.ts'
export {
  type BuyerHistory,
  type CreditCounts,
  cappedCredit,
  countedPaidTrust,
  creditedBuyer,
  isEstablished,
  keptPaidTrust,
  ON_TIME_PRIOR,
  PAID_CEILING,
  PAID_HALVING_USDC,
  PAID_TRUST_STEPS,
  POINTS_PER_BUYER,
  paidTrust,
  RATING_PRIOR,
  ratingVote,
  reliabilityVote,
  SELF_MADE_CEILING,
  SELF_MADE_POINTS,
  STANDING_AGE_MS,
  STANDING_ELSEWHERE_BASE_UNITS,
  selfMadeTrust,
  TRUST_CREDIT_PER_BUYER,
  TRUST_CREDITED_METHODS,
  type TrustBuyerRow,
  trustScore,
  trustTotals,
  voteWeight,
  weightedVote,
} from '../Trust.ts'
export { usernameKey } from '../User.ts'
export {
  type AgentRow,
  byPosition,
  type EventRow,
  type MilestoneRow,
  type SkillRow,
  skillColumns,
  skillsByAgent,
  toAgentRecord,
  toAgentRow,
  toEventRecord,
  toEventRow,
  toMilestoneRecord,
  toSkillRecord,
  toSkillRows,
  toUserRecord,
  toUserRow,
  type UserRow,
} from './agentRows.ts'
export { dateOf, ms } from './columns.ts'
export { type OutboxRow, settledMailColumns, toOutboxEntry, toOutboxRow } from './outboxRows.ts'
export {
  idempotencyOf,
  paymentColumns,
  pendingColumns,
  ratingColumns,
  type TaskRow,
  toTaskRecord,
  toTaskRow,
} from './taskRows.ts'
export {
  settledColumns,
  toDeliveryRecord,
  toDeliveryRow,
  toWebhookRecord,
  toWebhookRow,
  type WebhookDeliveryRow,
  type WebhookRow,
} from './webhookRows.ts'
