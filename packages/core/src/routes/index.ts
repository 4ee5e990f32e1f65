// @agentmarket/core/routes, for hosts that serve the marketplace their own way: the route table's row types, the
// web-standard HTTP helpers, rate limits, streams, ETags and problem types (createFetchHandler uses them all).

export { type AddressSlot, type AddressSlotLimits, addressSlots } from '../AddressSlots.ts'
export { answerHeaders, answerResponse, TASK_OUTCOME_STATUS } from '../actions/tasks/answers.ts'
export { ERROR_HELP, problemTypeDoc } from '../errorHelp.ts'
export {
  bearerKey,
  jsonObjectOf,
  jsonOfBytes,
  MAX_BODY_BYTES,
  PROBLEM_MEDIA_TYPE,
  problemResponse,
  readJson,
  readJsonObject,
  readLimited,
  requestPath,
  routeNotFound,
} from '../http.ts'
export type { RateDecision, RatePolicy } from '../ports/RateBuckets.ts'
export {
  addressBucket,
  clientKeyOf,
  DEFAULT_RATE_POLICIES,
  fallbackRateBuckets,
  leasedRateBuckets,
  NETWORK_CEILING_FACTOR,
  networkBucket,
  type RateAllowance,
  type RateClass,
  type RateClient,
  RateLimitedError,
  type RateLimiter,
  type RateLimiterOptions,
  rateLimiter,
  rateLimitHeaders,
} from '../RateLimit.ts'
export { etagOf, etagOfDigest, matchesETag } from './etag.ts'
export { feedStream, SSE_KEEPALIVE_MS, SSE_MAX_QUEUED_BYTES, wantsEventStream } from './feedStream.ts'
export { idempotencyOwners, idempotencyScope } from './idempotentRows.ts'
export { compileAllowedMethods, compileRoutes, type RouteMatch } from './match.ts'
export { PROBLEM_TYPE_CACHE, problemTypeAnswer, problemTypeResponse } from './problemTypes.ts'
export {
  apiPathOf,
  type InputSchema,
  type RouteAnswerSpec,
  type RouteAuth,
  type RouteCall,
  type RouteHeader,
  type RouteJson,
  type RouteReply,
  type RouteRow,
  type RouteTag,
  type RouteTool,
  rateClassOf,
  type ToolArgument,
} from './RouteRow.ts'
export { RESPONSE_SCHEMAS, type ResponseName } from './responses.ts'
export { DEFAULT_STREAM_LIMITS, type StreamLimits, type StreamSlots, streamSlots } from './streamSlots.ts'
