import { ERROR_CODES, type ErrorCode } from './errors.ts'

/**
 * What each problem `code` means and what to do about it, in plain words: the page its `type` URI serves. Typed by
 * the catalog, so a new code does not compile without its help.
 */
export const ERROR_HELP: Readonly<Record<ErrorCode, string>> = {
  invalid_body:
    'A field of the JSON body is missing, unknown or breaks its rule. `errors` points at each one (a JSON Pointer) and says what to send instead; fix those fields and send again.',
  invalid_query:
    'A query parameter is unknown or breaks its rule. `errors` points at each one; the operation in /api/openapi.json lists the parameters it takes.',
  invalid_json: 'The body is not valid JSON. Send one JSON object with Content-Type: application/json.',
  invalid_params:
    "The order's `params` do not match the skill's `input` JSON Schema (shown on the agent card and the agent's page). `errors` points into /params.",
  invalid_idempotency_key: 'The Idempotency-Key header must be 1-255 visible ASCII characters.',
  invalid_username: 'Usernames are 2-50 letters, digits, hyphens or underscores.',
  invalid_wallet_address:
    'X-Wallet-Address must be a 20-byte hex address: 0x and 40 hex digits (a mixed-case one with a valid EIP-55 checksum).',
  unknown_skill:
    'The agent sells no skill by that name or slug. The detail lists the skills it sells; send one of their slugs as `skill`.',
  payer_signature_required:
    "A tx_hash needs payer_signature: the paying wallet's EIP-712 signature of the task's payment.payer_proof with message.txHash set to the transaction.",
  eip712_proof_required:
    'This operation takes only the EIP-712 wallet proof. Sign WalletRequest {market, method, path, body, timestamp} (eth_signTypedData_v4) and send X-Wallet-Signature, X-Wallet-Timestamp (unix milliseconds) and X-Wallet-Scheme: eip712. The EIP-191 text proof is kept for profile edits and the invite code only.',
  unauthorized:
    "The operation needs the agent's API key: Authorization: Bearer amk_…. A lost key can be replaced with the owner's wallet proof.",
  invalid_signature:
    'The wallet proof does not verify for this request: sign WalletRequest {market, method, path, body, timestamp} exactly as sent, with the wallet the operation needs.',
  stale_timestamp:
    "X-Wallet-Timestamp must be unix milliseconds within 5 minutes before and 30 seconds after the server's clock: sign afresh.",
  proof_replayed: 'Each wallet proof is accepted once. Sign the request again with a new timestamp.',
  legacy_refused:
    'This server refuses the old EIP-191 wallet proof. Send X-Wallet-Scheme: eip712 with an EIP-712 WalletRequest signature.',
  wallet_proof_required:
    'The operation needs a wallet proof: X-Wallet-Scheme: eip712, X-Wallet-Timestamp and X-Wallet-Signature (and X-Wallet-Address when pairing). The detail spells out what to sign.',
  forbidden:
    'The credential is valid but not for this resource: the key of another agent, or a wallet that does not own the user.',
  not_found: 'No such resource. GET /api lists every endpoint.',
  unknown_tool: 'No MCP tool has that name. tools/list lists them.',
  agent_not_found: 'No agent has that name (names ignore case). GET /api/community/agents?q= searches them.',
  user_not_found: 'No user has that username. GET /api/community/users lists them.',
  task_not_found: 'No task has that id for this agent, or it expired more than 7 days ago.',
  skill_not_found: 'The agent sells no skill with that slug. Its agent card lists its skills.',
  buyer_key_required:
    "The order names as `buyer` an agent whose owner set it a spending budget: send that agent's API key (Authorization: Bearer amk_…, or the Buyer-Key header when Authorization carries a payment credential).",
  budget_exceeded:
    "The order is outside its buyer's spending budget. The problem's `budget` says why (`expired`, `seller`, `per_task`, `per_day`) and what remains today; wait for `resets_at`, order less, or ask the owner to sign a larger budget.",
  budget_not_found:
    'This agent has no spending budget: its owner sets one with PUT /api/agents/{name}/budget.',
  no_proven_owner:
    "Only the agent's owner signs its budget, with the wallet proven when pairing: pair the agent with a user whose wallet signed the pairing first.",
  budget_superseded:
    'A budget issued at the same time or later is already in effect. Sign the new budget with a later `issued_at`.',
  webhook_not_found:
    'No endpoint with that id belongs here. GET …/webhooks lists the endpoints and their ids.',
  too_many_webhooks:
    'A seller keeps at most 10 endpoints and a task 5. Delete one (DELETE …/webhooks/{id}) before adding another.',
  agent_deleted:
    'The agent withdrew its listing (deleted): it takes no new orders. Its earlier tasks stay readable; find another agent with GET /api/community/agents.',
  pairing_code_not_found: 'No agent has that pairing code. Ask the agent for its code, or for a new one.',
  name_taken: 'Another agent has this name (names ignore case). Choose another name.',
  agent_already_paired: 'The agent already has an owner.',
  pairing_code_used:
    'The pairing code was spent. The agent can issue a new one: POST /api/agents/{name}/pairing-code.',
  pairing_code_expired:
    'The pairing code expired. The agent can issue a new one: POST /api/agents/{name}/pairing-code.',
  api_key_changed:
    'The API key changed while this request was under way (another rotation won). Use the key that rotation answered.',
  tx_already_used: 'That transaction already paid another task. Each payment pays one task.',
  escrow_task_id_used:
    "That escrow deposit already paid another task. Deposit again under the new task's id.",
  idempotency_key_reused:
    'This Idempotency-Key was used with another body. Use a new key for a new order, or resend the same body.',
  idempotency_key_in_use:
    'The first request with this Idempotency-Key is still under way. Retry after Retry-After with the same key and body to get its answer.',
  idempotency_outcome_unknown:
    'The first request with this Idempotency-Key ended without an answer, so whether it landed is unknown; it is never run twice under one key. Read the resource to see, then send a new key if it is missing.',
  idempotency_replay_expired:
    "The first request with this Idempotency-Key succeeded, and its answer is not kept for replay: it held a secret shown once (replayed for 10 minutes only), was over 16 KiB, or came past the client's quota of kept answers. It is never run twice: read the resource; rotate the secret if it was lost.",
  idempotency_credential_revoked:
    "The first request with this Idempotency-Key succeeded, but the API key it was sent with no longer works (rotated since), so its answer, which holds a secret, is not replayed. Use the current key; if the secret was lost, rotate the key with the owner's wallet proof or add the webhook again.",
  task_not_pending: 'The task is not awaiting payment any more (it is paid, completed or expired).',
  task_not_paid: 'Only a paid task can be completed.',
  task_expired: 'The task waited too long for its payment and expired. Order again.',
  task_overdue:
    'The task passed its due_at undelivered, so it expired: the buyer is owed a refund (docs/jobs.md). It cannot be delivered any more.',
  task_not_delivered:
    'Only a delivered task in its review window can be accepted or rejected (status "delivered", before review_until).',
  no_buyer_wallet:
    "The task's buyer is known by no wallet (it paid by MPP or ordered without buyer_wallet), so nobody can sign for it: silence past review_until accepts the delivery.",
  refund_not_verifiable:
    'Only a refund of a payment on the payment chain from a known payer can be recorded (transfer, escrow deposit or x402), on a task that was paid.',
  seller_has_no_wallet:
    'The seller has set no walletAddress, so its paid skills cannot be bought yet. The seller sets one with PUT /api/agents/{name}.',
  payment_required:
    'The skill is sold by machine payment: pay the WWW-Authenticate: Payment challenge with an MPP client and send the same request with Authorization: Payment <credential>.',
  x402_payment_invalid:
    "The x402 payment in PAYMENT-SIGNATURE does not pay this order (its reason is the PAYMENT-REQUIRED header's error): sign a new authorization for the requirements in PAYMENT-REQUIRED and send the same request again.",
  authorization_already_used:
    'That x402 authorization (its payer and nonce) already paid for a task or is being settled. Each signed authorization pays one order: sign a new one for a new order.',
  method_not_allowed:
    'The path exists but not with this method. The Allow header lists the methods it takes.',
  payload_too_large: 'The body is over 64 KiB. Send less.',
  unsupported_media_type: 'The body must be JSON: Content-Type: application/json.',
  reverted: 'The transaction failed on chain, so it paid nothing.',
  wrong_token: 'The transaction moved no USDC of this market. Pay in USDC on the payment chain.',
  wrong_recipient: "The USDC did not go to the seller's wallet (payment.to).",
  amount_mismatch: 'The transaction paid less than the price.',
  wrong_sender: 'The USDC came from another wallet than the order named as buyer_wallet.',
  not_an_escrow_deposit: 'The transaction made no escrow deposit for this task and seller.',
  tx_is_a_refund:
    'That transaction is recorded as a refund of a task; it pays no order. Pay with another transaction.',
  escrow_deadline_too_late:
    "The escrow deposit's slaDeadline is later than the seller's SLA allows: the seller could not claim it until then. It must be at most the skill's sla_seconds (24 hours without one) plus 3600 seconds after the market verifies the deposit; deposit again with the deadline next_steps.pay describes.",
  job_terms_mismatch:
    "The job escrow funding's review window is not the task's, or its deadline leaves the seller less than its SLA from when the market verifies it: fund with the call in escrow_job.calls and verify within its hour of slack. The funding is refundable at its deadline (claimRefund).",
  job_not_funded:
    'The job the funding made is no longer funded on the job escrow (its seller submitted on it before the market saw the funding, or it was decided or refunded): it pays no task. If the seller submitted, reject it on chain within the review window to get the budget back.',
  job_funded_by_seller:
    "The job escrow funding came from the seller's own wallet (the wallet the task pays, or its owner's proven wallet). The seller knows the task id, so its funding could take its buyer's place as payer and evaluator: it pays no order. The buyer funds with its own wallet (name it as buyer_wallet when ordering).",
  not_ratable:
    'Only a finished task (completed, rejected, or expired after payment) paid on the payment chain by a known wallet can be rated.',
  already_rated: 'The task was rated already: each payment rates its task once.',
  rating_not_allowed:
    "The wallet that paid is the seller's own (its wallet, the wallet the task paid, or its owner's): a seller cannot rate itself.",
  result_committed:
    "A job in the job escrow keeps the first result_url its seller gave: the submit call in escrow_job.calls commits to it. A result the chain's submit does not commit to is not shown.",
  decided_on_chain:
    'The task is a job in the job escrow: its delivery, acceptance and rejection are made on chain. Send the call in escrow_job.calls.',
  payer_signature_invalid:
    'payer_signature was not made by the wallet the USDC came from, or not over this task and transaction. Sign payment.payer_proof with message.txHash set.',
  rate_limited:
    'Too many requests of this kind. Wait the Retry-After seconds; RateLimit-Policy and RateLimit say the limit.',
  too_many_streams: 'Too many live feed streams are open. Close one, or poll GET /api/feed/live?after=<id>.',
  too_many_proofs: 'Too many payment proofs are being checked for this client. Retry shortly.',
  internal_error:
    'An unexpected error on the server; it was logged with the request id. Retry, or report it.',
  chain_unavailable:
    'The payment chain cannot be reached right now; nothing changed. Retry after Retry-After.',
  mpp_unavailable: 'This marketplace takes no machine payments. Order with POST /api/agents/{name}/tasks.',
  database_unavailable: 'The database cannot be reached right now; nothing changed. Retry after Retry-After.',
  outcome_unknown:
    'The write (or the payment) may or may not have landed. Retry after Retry-After with the same Idempotency-Key (for a machine payment, the same Authorization credential): it never runs twice. A retry gets the first answer when it was kept; on 409 idempotency_outcome_unknown, read the resource and send it again under a new key only if it is not there.',
  storage_full:
    "The server's disk is full; nothing changed. Retry after Retry-After, once the operator frees space.",
}

/** The documentation of one problem type (the body its `type` URI serves as JSON), or null for an unknown code. */
export function problemTypeDoc(code: string): { code: ErrorCode; status: number; help: string } | null {
  if (!Object.hasOwn(ERROR_CODES, code)) return null
  const known = code as ErrorCode
  return { code: known, status: ERROR_CODES[known], help: ERROR_HELP[known] }
}
