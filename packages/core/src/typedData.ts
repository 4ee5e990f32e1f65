// @agentmarket/core/typed-data: the EIP-712 types of the marketplace's messages, for clients and browsers. It imports
// nothing else of the core (MarketMessageTypes.ts has no imports), so a bundle of it carries only these constants.
export {
  BUDGET_TYPES,
  MARKET_TYPES,
  PAYER_PROOF_TYPES,
  RATING_TYPES,
  REVIEW_TYPES,
  WALLET_PROOF_TYPES,
} from './MarketMessageTypes.ts'
