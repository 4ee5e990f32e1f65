import { type Address, type Hex, keccak256, stringToHex, zeroAddress } from 'viem'
import type { MarketConfig } from './Config.ts'
import type { TaskRating } from './Job.ts'
import { moneyState, paymentTxHash, type TaskRecord } from './Task.ts'
import { TRUST_CREDITED_METHODS } from './Trust.ts'

/**
 * A rating as its agent's public list shows it, with what ERC-8004's Reputation Registry takes: the arguments of
 * giveFeedback and the off-chain feedback file (its keccak256 is feedbackHash), whose proofOfPayment is the task's
 * on-chain payment. Never the task's id, params or result.
 */
export type RatingView = {
  score: number
  comment: string
  wallet: Address
  at: string
  skill: string
  payment: { chain_id: number; tx_hash: Hex | null; amount_base_units: string; to: Address | null }
  erc8004: {
    function: string
    args: {
      agentId: null
      value: number
      valueDecimals: 0
      tag1: 'starred'
      tag2: string
      endpoint: string
      feedbackURI: string
      feedbackHash: Hex
    }
    feedback: Record<string, unknown>
  }
}

/** ERC-8004's giveFeedback, as the Reputation Registry declares it. */
export const ERC8004_GIVE_FEEDBACK =
  'giveFeedback(uint256 agentId, int128 value, uint8 valueDecimals, string tag1, string tag2, string endpoint, string feedbackURI, bytes32 feedbackHash)'

/** A score of 1-5 stars as ERC-8004's `starred` value (0-100). */
export const starredValue = (score: number) => score * 20

/** The public view of a rated task's rating, with its ERC-8004 feedback. */
export function toRatingView(task: TaskRecord, rating: TaskRating, config: MarketConfig): RatingView {
  const agentPath = `${config.baseUrl}/api/agents/${encodeURIComponent(task.agentName)}`
  const txHash = paymentTxHash(task.payment)
  const chainId = config.chain.chainId
  const value = starredValue(rating.score)
  const feedback = {
    agentRegistry: null,
    agentId: null,
    clientAddress: `eip155:${chainId}:${rating.wallet}`,
    createdAt: rating.at.toISOString(),
    value,
    valueDecimals: 0,
    tag1: 'starred',
    tag2: task.skillSlug,
    endpoint: agentPath,
    comment: rating.comment,
    proofOfPayment: {
      fromAddress: task.payment?.from ?? null,
      toAddress: task.payTo,
      chainId: String(chainId),
      txHash,
    },
  }
  return {
    score: rating.score,
    comment: rating.comment,
    wallet: rating.wallet,
    at: rating.at.toISOString(),
    skill: task.skillName,
    payment: {
      chain_id: chainId,
      tx_hash: txHash,
      amount_base_units: (task.payment?.amountBaseUnits ?? 0n).toString(),
      to: task.payTo,
    },
    erc8004: {
      function: ERC8004_GIVE_FEEDBACK,
      args: {
        agentId: null,
        value,
        valueDecimals: 0,
        tag1: 'starred',
        tag2: task.skillSlug,
        endpoint: agentPath,
        feedbackURI: `${agentPath}/ratings#${txHash ?? ''}`,
        feedbackHash: keccak256(stringToHex(JSON.stringify(feedback))),
      },
      feedback,
    },
  }
}

/**
 * True when a rating of `task` counts in its agent's public summary and trust score: unless the task's money went back
 * to its buyer when rated (a job escrow's rejection or expiry, refund records summing to the payment). A refunded buyer
 * paid nothing, so its vote weighs nothing; the rating is still listed with the others.
 */
export function ratingCounts(task: TaskRecord): boolean {
  return moneyState(task) !== 'refunded'
}

/** Whether a task can be rated: finished (completed, rejected or expired after payment), paid on chain by a wallet. */
export function isRatable(task: TaskRecord): boolean {
  const paid = task.payment
  if (!paid?.from || paid.amountBaseUnits <= 0n || !TRUST_CREDITED_METHODS.includes(paid.method)) return false
  // A mint's Transfer comes from the zero address: nobody is known to have paid.
  if (paid.from.toLowerCase() === zeroAddress) return false
  return task.status === 'completed' || task.status === 'rejected' || task.status === 'expired'
}
