// The EIP-712 types of every message a wallet signs for the marketplace. No imports: browsers and the client load
// this module (`@agentmarket/core/typed-data`) without anything else of the core.

/** A payer's claim of a payment for a task (its transaction): X-Payer-Signature, verify-payment's `payer_signature`. */
export const PAYER_PROOF_TYPES = {
  PaymentClaim: [
    { name: 'market', type: 'string' },
    { name: 'agent', type: 'string' },
    { name: 'task', type: 'string' },
    { name: 'txHash', type: 'bytes32' },
  ],
} as const

/** A buyer's decision on a delivery under review. */
export const REVIEW_TYPES = {
  DeliveryReview: [
    { name: 'market', type: 'string' },
    { name: 'agent', type: 'string' },
    { name: 'task', type: 'string' },
    { name: 'decision', type: 'string' },
    { name: 'reason', type: 'string' },
  ],
} as const

/** A payer's rating of a finished task. */
export const RATING_TYPES = {
  TaskRating: [
    { name: 'market', type: 'string' },
    { name: 'agent', type: 'string' },
    { name: 'task', type: 'string' },
    { name: 'score', type: 'uint8' },
    { name: 'comment', type: 'string' },
  ],
} as const

/** An owner's spending budget for its agent as a buyer (amounts in USDC base units, times in unix seconds). */
export const BUDGET_TYPES = {
  SpendingBudget: [
    { name: 'market', type: 'string' },
    { name: 'agent', type: 'string' },
    { name: 'perTaskMax', type: 'uint256' },
    { name: 'perDayMax', type: 'uint256' },
    { name: 'sellers', type: 'string[]' },
    { name: 'expiresAt', type: 'uint256' },
    { name: 'issuedAt', type: 'uint256' },
  ],
} as const

/**
 * The request a wallet signs to prove itself (X-Wallet-Scheme: eip712): the marketplace (its BASE_URL), the method,
 * the path, keccak256 of the exact body bytes (of no bytes when there is none) and the time in milliseconds.
 */
export const WALLET_PROOF_TYPES = {
  WalletRequest: [
    { name: 'market', type: 'string' },
    { name: 'method', type: 'string' },
    { name: 'path', type: 'string' },
    { name: 'body', type: 'bytes32' },
    { name: 'timestamp', type: 'uint64' },
  ],
} as const

/** Every message's types by its primary type: what a client signs, never the types an answer carries. */
export const MARKET_TYPES = {
  ...PAYER_PROOF_TYPES,
  ...REVIEW_TYPES,
  ...RATING_TYPES,
  ...BUDGET_TYPES,
  ...WALLET_PROOF_TYPES,
} as const
