// @agentmarket/core: the marketplace, its configuration, its ports and their records, its errors, the views a client
// reads, the route table and createFetchHandler. Store authors: @agentmarket/core/rows; hosts building their own HTTP
// layer: @agentmarket/core/routes. A change to these names is a change of the package's API: see surface.test.ts.

export {
  A2A_JWKS_PATH,
  type A2aAgentCard,
  a2aCardView,
  buildMarketCard,
  MARKET_SKILLS,
  wantsA2aMediaType,
} from './A2aCard.ts'
export type { AgentPatch, AgentRecord, Platform } from './Agent.ts'
export type { AgentCard, CardSkill } from './AgentCard.ts'
export type { AgentRegistrationFile } from './AgentRegistration.ts'
export type { AgentFilters, AgentOrder } from './AgentSearch.ts'
export { type AgentSummary, type AgentView, agentLinks, type HeartbeatView } from './AgentView.ts'
export type { HeartbeatResult } from './actions/agents/heartbeat.ts'
export type { AgentPage, AgentRowsPage, BrowsePage } from './actions/agents/readAgents.ts'
export type { Registration } from './actions/agents/registerAgent.ts'
export type { KeyRotation } from './actions/agents/rotateApiKey.ts'
export type { AgentSyncPage, AgentTombstone } from './actions/agents/syncAgents.ts'
export type { MailDeliveryOptions, MailDeliveryReport } from './actions/mail/deliverMail.ts'
export type { OrderMailResult } from './actions/mail/receiveOrderMail.ts'
export type { PendingVerification, TaskAnswer } from './actions/tasks/answers.ts'
export type { OrderOptions } from './actions/tasks/createTask.ts'
export type { JobFollowReport } from './actions/tasks/jobFollower.ts'
export { jobSteps } from './actions/tasks/jobSteps.ts'
export type { RatingPage } from './actions/tasks/rateTask.ts'
export type { TaskPage } from './actions/tasks/readTasks.ts'
export type { RecheckReport } from './actions/tasks/rechecks.ts'
export type { RefundAnswer } from './actions/tasks/refundTask.ts'
export type { ThreadTask } from './actions/tasks/threads.ts'
export type { X402TaskPayment } from './actions/tasks/x402Tasks.ts'
export type { UserPage } from './actions/users/profiles.ts'
export type { ProvedRequest } from './actions/users/walletProof.ts'
export { type MemoryStoreOptions, memoryStore } from './adapters/memoryStore.ts'
export {
  type BudgetTypedData,
  type BudgetUsage,
  type BudgetView,
  budgetTypedData,
  type SpendCap,
  signedBudgetOf,
} from './Budget.ts'
export {
  type RatingTypedData,
  type ReviewTypedData,
  ratingTypedData,
  reviewTypedData,
} from './BuyerReview.ts'
export {
  BASE_USDC,
  chainName,
  DEFAULT_IDEMPOTENCY_QUOTA,
  defaultConfig,
  type IdempotencyQuota,
  type MarketConfig,
  TEMPO_USDC_E,
} from './Config.ts'
export { generateId, hashSecret } from './Credentials.ts'
export type { EscrowJobView } from './EscrowJobView.ts'
export {
  BudgetExceededError,
  type BudgetRefusal,
  type BudgetRemaining,
  ChainUnavailableError,
  type CodeOf,
  ConflictError,
  ERROR_CODES,
  type ErrorCode,
  type FieldProblem,
  ForbiddenError,
  InvalidInputError,
  isUnexpected,
  MarketError,
  MethodNotAllowedError,
  NotFoundError,
  PaymentRefusedError,
  type Problem,
  StorageFullError,
  StoreUnavailableError,
  TooManyStreamsError,
  toProblem,
  UnauthorizedError,
} from './errors.ts'
export { feedEvents } from './events.ts'
export { type FairShare, WEBHOOK_FAIR_SHARE } from './FairQueue.ts'
export type { FeedEventInput, FeedEventRecord, FeedEventView } from './Feed.ts'
export type {
  DeliveryRecordView,
  RatingSummaryView,
  TaskEntry,
  TaskEntryView,
  TaskOutcome,
  TaskRating,
} from './Job.ts'
export { IDLE_WINDOW_MS, LIVE_WINDOW_MS, type Liveness } from './Liveness.ts'
export { Marketplace, type MarketplaceActions, type MarketplacePorts } from './Marketplace.ts'
export type { MilestonePage, MilestoneRecord, MilestoneView } from './Milestone.ts'
export { toBaseUnits } from './Money.ts'
export { isAddressLiteral, isPublicAddress } from './NetworkAddress.ts'
export {
  type InboundOrderMail,
  MAX_ORDER_MAIL_BYTES,
  type MailMessage,
  type MailOutcome,
  ORDER_MAIL_HEADER_LIMITS,
  type OrderMailRefusal,
  type OutboxEntry,
} from './OrderMail.ts'
export { type MppSettings, persistentMppSecret } from './payments/Mpp.ts'
export { type PayerProofTypedData, payerProofTypedData } from './payments/PayerProof.ts'
export { type PaidOffer, type PaidOfferPage, paymentInfoOf } from './payments/PaymentInfo.ts'
export { type PaymentCheck, TRANSFER_EVENT_ABI, type Verdict, verifyPayments } from './payments/Verifier.ts'
export type { PaymentRequired, X402Facilitator, X402Settings } from './payments/X402.ts'
export type { CardSignature, CardSigner } from './ports/CardSigner.ts'
export type { ChainReader, ContractLog, PaymentReceipt, ReceiptLog } from './ports/Chain.ts'
export { type Clock, manualClock, systemClock } from './ports/Clock.ts'
export { DEFAULT_CHAIN_BUDGET_MS, inChainBudget } from './ports/chainBudget.ts'
export { type DigestEncoding, type Hashes, portableHashes, useNativeHashes } from './ports/Hashes.ts'
export type { KvChange, KvExpiry, KvStore, KvWrite } from './ports/KvStore.ts'
export type { Mailer } from './ports/Mailer.ts'
export { cryptoRandom, type Random } from './ports/Random.ts'
export type { RateBuckets } from './ports/RateBuckets.ts'
export { currentRequest, outsideRequest } from './ports/requestScope.ts'
export type {
  AgentClaim,
  AgentListQuery,
  AgentStore,
  BuyerDecisions,
  ClaimResult,
  FeedListQuery,
  FeedStore,
  InsertTaskResult,
  JobCounts,
  ListQuery,
  MailStore,
  MarkPaidResult,
  OnlineEvent,
  OrderMailReceipt,
  PaidOfferRecord,
  SellerSkill,
  Store,
  StoreLifecycle,
  TaskChange,
  TaskListQuery,
  TaskStore,
  UserListQuery,
  UserStore,
  WebhookStore,
} from './ports/Store.ts'
export type { WebhookResponse, WebhookTransport } from './ports/WebhookTransport.ts'
export { memoryRateBuckets } from './RateLimit.ts'
export type { RatingView } from './Rating.ts'
export { createFetchHandler, type FetchHandlerOptions } from './routes/fetchHandler.ts'
export { MARKET_ROUTES } from './routes/marketRoutes.ts'
export {
  type ResultReveal,
  SkillInput,
  SkillObject,
  type SkillRecord,
  type SkillView,
  slugify,
} from './Skill.ts'
export {
  type IdempotentAnswer,
  type MoneyState,
  type PaymentMethod,
  type PendingCheck,
  type TaskPayment,
  type TaskRecord,
  type TaskStatus,
  UNPAID_TASK_TTL_MS,
} from './Task.ts'
export { MAX_PARAMS_DEPTH, PaidOrderInput } from './TaskInput.ts'
export type { NextSteps } from './TaskSteps.ts'
export type {
  BuyerDecisionsView,
  PublicTaskRow,
  SellerTaskView,
  TaskPaymentView,
  TaskView,
} from './TaskView.ts'
export { withoutTrailing } from './Trim.ts'
export type { UserRecord, UserSummary, UserView } from './User.ts'
export { closestName, nestsDeeperThan } from './Validation.ts'
export {
  WALLET_PROOF_SCHEME,
  type WalletProof,
  walletProofMessage,
  walletProofTypedData,
} from './WalletProof.ts'
export {
  WEBHOOK_EVENT_TYPES,
  WEBHOOK_PHASE_TIMEOUTS_MS,
  type WebhookDelivery,
  type WebhookDeliveryView,
  type WebhookEventType,
  type WebhookOutcome,
  type WebhookRecord,
  type WebhookView,
} from './Webhook.ts'
