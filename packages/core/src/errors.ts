/** One field-level problem: a JSON Pointer into the body or query, and what is wrong there. */
export type FieldProblem = { pointer: string; detail: string }

/** Why an order is outside its buyer's budget. */
export type BudgetRefusal = 'expired' | 'seller' | 'per_task' | 'per_day'

/** What a refusal tells the buyer: why, and what remains. */
export type BudgetRemaining = {
  reason: BudgetRefusal
  per_task_max: number
  per_day_max: number
  remaining_today: number
  resets_at: string
  expires_at: string
}

/** An RFC 9457 problem body, as every host serves it. */
export type Problem = {
  type: string
  title: string
  status: number
  detail: string
  instance: string
  code: ErrorCode
  errors?: FieldProblem[]
  /** With budget_exceeded: why, and what the buyer's budget leaves. */
  budget?: BudgetRemaining
}

/**
 * Every problem `code` the API answers, and its HTTP status: the one list of them. Codes are stable (clients branch on
 * them); a new code is an addition to this catalog, and an error class only takes codes of its own status.
 */
export const ERROR_CODES = {
  invalid_body: 400,
  invalid_query: 400,
  invalid_json: 400,
  invalid_idempotency_key: 400,
  invalid_username: 400,
  invalid_wallet_address: 400,
  invalid_params: 400,
  unknown_skill: 400,
  payer_signature_required: 400,
  eip712_proof_required: 400,
  unauthorized: 401,
  idempotency_credential_revoked: 401,
  payment_required: 402,
  x402_payment_invalid: 402,
  invalid_signature: 401,
  stale_timestamp: 401,
  proof_replayed: 401,
  legacy_refused: 401,
  wallet_proof_required: 401,
  buyer_key_required: 401,
  forbidden: 403,
  not_found: 404,
  unknown_tool: 404,
  agent_not_found: 404,
  user_not_found: 404,
  task_not_found: 404,
  skill_not_found: 404,
  pairing_code_not_found: 404,
  budget_not_found: 404,
  webhook_not_found: 404,
  method_not_allowed: 405,
  name_taken: 409,
  agent_already_paired: 409,
  pairing_code_used: 409,
  pairing_code_expired: 409,
  tx_already_used: 409,
  escrow_task_id_used: 409,
  idempotency_key_reused: 409,
  idempotency_key_in_use: 409,
  idempotency_outcome_unknown: 409,
  idempotency_replay_expired: 409,
  task_not_pending: 409,
  authorization_already_used: 409,
  task_not_paid: 409,
  task_expired: 409,
  task_overdue: 409,
  task_not_delivered: 409,
  no_buyer_wallet: 409,
  refund_not_verifiable: 409,
  seller_has_no_wallet: 409,
  api_key_changed: 409,
  no_proven_owner: 409,
  agent_deleted: 409,
  budget_superseded: 409,
  too_many_webhooks: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  reverted: 422,
  wrong_token: 422,
  wrong_recipient: 422,
  amount_mismatch: 422,
  wrong_sender: 422,
  not_an_escrow_deposit: 422,
  job_terms_mismatch: 422,
  job_not_funded: 422,
  job_funded_by_seller: 422,
  escrow_deadline_too_late: 422,
  tx_is_a_refund: 422,
  decided_on_chain: 409,
  result_committed: 409,
  not_ratable: 409,
  already_rated: 409,
  rating_not_allowed: 403,
  budget_exceeded: 403,
  payer_signature_invalid: 422,
  rate_limited: 429,
  too_many_streams: 429,
  too_many_proofs: 429,
  internal_error: 500,
  chain_unavailable: 503,
  mpp_unavailable: 503,
  database_unavailable: 503,
  outcome_unknown: 503,
  storage_full: 507,
} as const satisfies Record<string, number>

/** A stable problem code of the catalog. */
export type ErrorCode = keyof typeof ERROR_CODES

/** The codes of one HTTP status (`CodeOf<404>`: the not-found codes). */
export type CodeOf<Status extends number> = {
  [Code in ErrorCode]: (typeof ERROR_CODES)[Code] extends Status ? Code : never
}[ErrorCode]

/**
 * Base of every error the core throws on a broken contract: a stable snake_case code and an HTTP status. `cause`,
 * when set, is the unexpected failure behind it, which hosts log (the client sees only the problem).
 */
export class MarketError extends Error {
  override readonly name: string = 'MarketError'
  constructor(
    readonly code: ErrorCode,
    readonly status: number,
    readonly title: string,
    detail: string,
    readonly errors?: FieldProblem[],
    options?: { cause?: unknown },
  ) {
    super(detail, options)
  }
}

/** 400: a body, query or parameter that breaks its schema. */
export class InvalidInputError extends MarketError {
  override readonly name = 'InvalidInputError'
  constructor(code: CodeOf<400>, detail: string, errors?: FieldProblem[]) {
    super(code, 400, 'Invalid request', detail, errors)
  }
}

/** 401: the bearer key is missing or does not match any agent. */
export class UnauthorizedError extends MarketError {
  override readonly name = 'UnauthorizedError'
  constructor(
    detail = 'A valid bearer API key is required: Authorization: Bearer <API_KEY>.',
    code: CodeOf<401> = 'unauthorized',
    /** The WWW-Authenticate challenge hosts send with the 401. */
    readonly challenge = 'Bearer realm="agentmarket"',
  ) {
    super(code, 401, 'Unauthorized', detail)
  }
}

/** 403: a valid credential that is not allowed to act on this resource. */
export class ForbiddenError extends MarketError {
  override readonly name = 'ForbiddenError'
  constructor(detail: string, code: CodeOf<403> = 'forbidden') {
    super(code, 403, 'Forbidden', detail)
  }
}

/** 403 budget_exceeded: the order is outside its buyer's spending budget; `budget` says why and what remains. */
export class BudgetExceededError extends MarketError {
  override readonly name = 'BudgetExceededError'
  constructor(
    detail: string,
    readonly budget: BudgetRemaining,
  ) {
    super('budget_exceeded', 403, 'Budget exceeded', detail)
  }
}

/** 404: the named resource does not exist. */
export class NotFoundError extends MarketError {
  override readonly name = 'NotFoundError'
  constructor(code: CodeOf<404>, detail: string) {
    super(code, 404, 'Not found', detail)
  }
}

/** 405: the path exists, but not with this method; `allow` lists the methods it takes (the Allow header). */
export class MethodNotAllowedError extends MarketError {
  override readonly name = 'MethodNotAllowedError'
  constructor(readonly allow: readonly string[]) {
    super(
      'method_not_allowed',
      405,
      'Method not allowed',
      `This path does not take this method; it takes ${allow.join(', ')}.`,
    )
  }
}

/** 409: the request conflicts with the current state (a taken name, a used code). */
export class ConflictError extends MarketError {
  override readonly name = 'ConflictError'
  constructor(code: CodeOf<409>, detail: string) {
    super(code, 409, 'Conflict', detail)
  }
}

/**
 * True when an error is a fault the host should log: not one of ours, or ours with an unexpected failure behind it
 * (its `cause`, e.g. a chain read that threw). Refusals the rules made are not logged.
 */
export function isUnexpected(error: unknown): boolean {
  return !(error instanceof MarketError) || error.cause !== undefined
}

/** Maps any thrown value to a problem body; unknown errors become an opaque 500 that leaks nothing. */
export function toProblem(error: unknown, instance: string, typeBase: string): Problem {
  const known = error instanceof MarketError
  const code = known ? error.code : 'internal_error'
  const problem: Problem = {
    type: `${typeBase}/problems/${code}`,
    title: known ? error.title : 'Internal server error',
    status: known ? error.status : 500,
    detail: known ? error.message : 'An unexpected error occurred; it has been logged.',
    instance,
    code,
  }
  if (known && error.errors) problem.errors = error.errors
  if (error instanceof BudgetExceededError) problem.budget = error.budget
  return problem
}

/** 422: a payment that was checked on chain and does not pay this task; `code` says why. */
export class PaymentRefusedError extends MarketError {
  override readonly name = 'PaymentRefusedError'
  constructor(code: CodeOf<422>, detail: string) {
    super(code, 422, 'Payment refused', detail)
  }
}

/** 503: the payment chain's RPC cannot be reached; nothing changed, retry after `retryAfterSeconds`. */
export class ChainUnavailableError extends MarketError {
  override readonly name = 'ChainUnavailableError'
  readonly retryAfterSeconds = 5
  constructor(
    detail = 'The payment chain cannot be reached right now; nothing changed. Retry shortly.',
    options?: { cause?: unknown },
  ) {
    super('chain_unavailable', 503, 'Payment chain unavailable', detail, undefined, options)
  }
}

/**
 * 503 `outcome_unknown` for a payment: the market sent the payment's transaction (`txHash`) and did not hear whether
 * it was mined. Resending the same credential is safe (one signed transaction is mined at most once) and gets the
 * task once it is; paying anew could pay twice.
 */
export class PaymentOutcomeUnknownError extends MarketError {
  override readonly name = 'PaymentOutcomeUnknownError'
  readonly retryAfterSeconds = 2
  constructor(
    readonly txHash: string,
    options?: { cause?: unknown },
  ) {
    super(
      'outcome_unknown',
      503,
      'Payment outcome unknown',
      `The payment's transaction ${txHash} was sent and the network did not say whether it was mined. Send the same request with the same Authorization credential after Retry-After: it cannot pay twice, and you get your task once it is mined. Do not pay again with a new credential.`,
      undefined,
      options,
    )
  }
}

/**
 * 409: the first request under this Idempotency-Key is still under way; retry after Retry-After and get its answer.
 */
export class IdempotencyKeyInUseError extends MarketError {
  override readonly name = 'IdempotencyKeyInUseError'
  constructor(readonly retryAfterSeconds: number) {
    super(
      'idempotency_key_in_use',
      409,
      'Conflict',
      'A request with this Idempotency-Key is still under way. Retry after Retry-After with the same key and body to get its answer.',
    )
  }
}

/** 409 `idempotency_key_reused`: the Idempotency-Key was first sent with another body (every keyed write says it alike). */
export const idempotencyKeyReused = () =>
  new ConflictError(
    'idempotency_key_reused',
    'This Idempotency-Key was already used with a different request body.',
  )

/**
 * 503: the database cannot be reached, its pool has no connection free in time, or it is locked. `outcome` says
 * whether the write can have landed: `unchanged` (it never reached the database: retry freely) or `unknown` (it was
 * sent and may still commit: retry with the same Idempotency-Key, under which it never runs twice).
 */
export class StoreUnavailableError extends MarketError {
  override readonly name = 'StoreUnavailableError'
  readonly retryAfterSeconds: number
  constructor(
    readonly outcome: 'unchanged' | 'unknown',
    options?: { cause?: unknown; retryAfterSeconds?: number },
  ) {
    const unknown = outcome === 'unknown'
    super(
      unknown ? 'outcome_unknown' : 'database_unavailable',
      503,
      unknown ? 'Outcome unknown' : 'Database unavailable',
      unknown
        ? 'The database stopped answering while this write was under way; it may or may not have landed. Retry after Retry-After with the same Idempotency-Key: it never runs twice under it. A retry gets the first answer when it was kept, or 409 idempotency_outcome_unknown: then read the resource, and send the write again under a new key only if it is not there.'
        : 'The database cannot be reached right now; nothing changed. Retry after Retry-After.',
      undefined,
      options,
    )
    this.retryAfterSeconds = options?.retryAfterSeconds ?? spreadRetryAfter()
  }
}

/**
 * 1, 2 or 3 seconds at random: the clients one outage refused together would otherwise all come back in the same
 * second and meet the database as it recovers (seen: the restart's backlog, and answers seconds late, right after it).
 */
export function spreadRetryAfter(): number {
  return 1 + Math.floor(Math.random() * 3)
}

/** 507: the database's disk is full; nothing changed, retry once the operator frees space. */
export class StorageFullError extends MarketError {
  override readonly name = 'StorageFullError'
  readonly retryAfterSeconds = 30
  constructor(options?: { cause?: unknown }) {
    super(
      'storage_full',
      507,
      'Storage full',
      "The server's disk is full; nothing changed. Retry later: the operator has been told.",
      undefined,
      options,
    )
  }
}

/** 429: the client (or the whole server) already holds as many open live streams as it may. */
export class TooManyStreamsError extends MarketError {
  override readonly name = 'TooManyStreamsError'
  readonly retryAfterSeconds = 5
  constructor(detail: string) {
    super('too_many_streams', 429, 'Too many open streams', detail)
  }
}
