import type { Address, Hex } from 'viem'
import { RATING_TYPES, REVIEW_TYPES } from './MarketMessageTypes.ts'
import { type MarketTypedData, marketTypedData, signedByWallet } from './MarketTypedData.ts'
import type { ChainReader } from './ports/Chain.ts'

/**
 * The EIP-712 message a buyer's wallet signs to accept or reject a delivery: bound to the marketplace (its base URL),
 * the agent, the task and the decision with its reason, so a signature decides one task once and nothing else.
 */
export { REVIEW_TYPES }

/** A buyer's decision on a delivery. */
export type ReviewDecision = 'accept' | 'reject'

/** The fields of a DeliveryReview; `decision` and `reason` are '' in the template a task shows. */
export type DeliveryReview = {
  market: string
  agent: string
  task: string
  decision: ReviewDecision | ''
  reason: string
}

/** The typed data a buyer's wallet signs (viem `signTypedData`), as a delivered task shows it. */
export type ReviewTypedData = MarketTypedData<typeof REVIEW_TYPES, 'DeliveryReview', DeliveryReview>

/** The typed data of a review on the payment chain `chainId`. */
export function reviewTypedData(chainId: number, review: DeliveryReview): ReviewTypedData {
  return marketTypedData(chainId, REVIEW_TYPES, 'DeliveryReview', review)
}

/**
 * Whether `signature` is `buyer`'s signature of the review (keys locally; contract wallets through the chain).
 * @example await isBuyerReview(chain, payer, 8453, { market, agent, task, decision: 'accept', reason: '' }, signature)
 */
export async function isBuyerReview(
  chain: ChainReader | null,
  buyer: Address,
  chainId: number,
  review: DeliveryReview,
  signature: Hex,
): Promise<boolean> {
  return signedByWallet(chain, buyer, reviewTypedData(chainId, review), signature)
}

/**
 * The EIP-712 message the wallet that paid a task signs to rate it (1-5 stars and a comment): bound to the marketplace,
 * the agent and the task, so one payment rates one task once.
 */
export { RATING_TYPES }

/** The fields of a TaskRating; `score` is 0 and `comment` '' in the template a task shows. */
export type TaskRatingMessage = {
  market: string
  agent: string
  task: string
  score: number
  comment: string
}

/** The typed data a paying wallet signs to rate its task. */
export type RatingTypedData = MarketTypedData<typeof RATING_TYPES, 'TaskRating', TaskRatingMessage>

/** The typed data of a rating on the payment chain `chainId`. */
export function ratingTypedData(chainId: number, rating: TaskRatingMessage): RatingTypedData {
  return marketTypedData(chainId, RATING_TYPES, 'TaskRating', rating)
}

/** Whether `signature` is `payer`'s signature of the rating (keys locally; contract wallets through the chain). */
export async function isPayerRating(
  chain: ChainReader | null,
  payer: Address,
  chainId: number,
  rating: TaskRatingMessage,
  signature: Hex,
): Promise<boolean> {
  return signedByWallet(chain, payer, ratingTypedData(chainId, rating), signature)
}
