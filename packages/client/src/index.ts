export { type BudgetTerms, baseUnits, signedBudget } from './budget.ts'
export {
  AgentmarketClient,
  type ClientOptions,
  createClient,
  type ReadOptions,
  SETTLED_STATUSES,
  type WaitOptions,
  type WriteOptions,
} from './client.ts'
export { AgentmarketError, retryAfterSeconds } from './errors.ts'
export type { components, operations, paths } from './generated/openapi.d.ts'
export { payTaskByJob, reviewJob, submitJob } from './jobEscrow.ts'
export { type MppOptions, type MppOrder, orderWithMpp } from './mpp.ts'
export { type PaidTask, type PayingWallet, payTask, payTaskByEscrow, verifyTransfer } from './transfer.ts'
export { MARKET_TYPES, type MarketMessage, type Signer, signTyped } from './typedData.ts'
export type * from './types.ts'
export { type ProvedRequest, walletProofHeaders } from './walletProof.ts'
export { verifyWebhook, type WebhookEvent } from './webhooks.ts'
export { orderWithX402, type X402Options, type X402Order } from './x402.ts'
