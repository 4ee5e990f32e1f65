import * as v from 'valibot'
import type { Hex } from 'viem'
import { AGENT_NAME_PATTERN } from './Agent.ts'
import { DISPUTE_REASON_LENGTH, MAX_REASON_LENGTH } from './Job.ts'
import { TASK_STATUSES } from './Task.ts'
import {
  boundedJsonObject,
  boundedText,
  HttpUrl,
  noControlCharacters,
  pageNumber,
  strictFields,
  visibleText,
  WalletAddressInput,
} from './Validation.ts'

// What a task's actions accept: the bodies, query and headers of orders, payment checks and a buyer's decisions.

/** The largest `params` object, measured as UTF-8 JSON. */
export const MAX_PARAMS_BYTES = 16 * 1024
/** The deepest `params` object: levels of nested objects and arrays, the object itself being level 1. */
export const MAX_PARAMS_DEPTH = 32
/** The longest Idempotency-Key header accepted. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255

const TxHash = v.pipe(
  v.string('must be a string'),
  v.trim(),
  v.regex(/^0x[0-9a-fA-F]{64}$/, 'must be a transaction hash: 0x and 64 hex digits'),
  v.toLowerCase(),
  v.transform((text) => text as Hex),
)

/** An EIP-712 signature: 65 bytes from a key, longer from contract wallets (ERC-1271, ERC-6492 wrapped). */
export const Signature = v.pipe(
  v.string('must be a string'),
  v.trim(),
  v.regex(
    /^0x(?:[0-9a-fA-F]{2}){64,8192}$/,
    'must be an EIP-712 signature: 0x and an even number of hex digits (130 for a key, more for contract wallets)',
  ),
  v.toLowerCase(),
  v.transform((text) => text as Hex),
)

const Params = boundedJsonObject(MAX_PARAMS_BYTES, MAX_PARAMS_DEPTH)

/** Body of POST /api/agents/{name}/tasks. */
export const CreateTaskInput = strictFields({
  skill: boundedText(100, 1),
  params: v.optional(Params),
  buyer: v.optional(
    v.pipe(
      v.string('must be a string'),
      v.regex(AGENT_NAME_PATTERN, 'must be an agent name: 2-50 letters, digits, hyphens or underscores'),
    ),
  ),
  buyer_email: v.optional(
    v.pipe(
      v.string('must be a string'),
      v.trim(),
      v.maxLength(254, 'must be at most 254 characters'),
      v.email('must be an e-mail address'),
    ),
  ),
  buyer_wallet: v.optional(WalletAddressInput),
  tx_hash: v.optional(TxHash),
  /** The paying wallet's EIP-712 signature binding `tx_hash` to this order (see PayerProof.ts). */
  payer_signature: v.optional(
    v.pipe(
      Signature,
      v.description(
        'Required with tx_hash: the paying wallet\'s EIP-712 signature of the agent card\'s commerce.payer_proof (task ""), message.txHash = tx_hash.',
      ),
    ),
  ),
})
/** Validated create input. */
export type CreateTaskInput = v.InferOutput<typeof CreateTaskInput>

/** Body of a paid per-skill order (SPEC row 12): the skill comes from the path; a payment credential pays it. */
export const PaidOrderInput = strictFields({
  skill: v.optional(boundedText(100, 1)),
  params: CreateTaskInput.entries.params,
  buyer: CreateTaskInput.entries.buyer,
  buyer_email: CreateTaskInput.entries.buyer_email,
  buyer_wallet: CreateTaskInput.entries.buyer_wallet,
})
/** Validated paid order. */
export type PaidOrderInput = v.InferOutput<typeof PaidOrderInput>

/** Body of POST …/tasks/{id}/verify-payment: the payment and the paying wallet's signature binding it to the task. */
export const VerifyPaymentInput = strictFields({
  tx_hash: TxHash,
  payer_signature: v.optional(
    v.pipe(
      Signature,
      v.description(
        "Required (400 payer_signature_required without it): the paying wallet's EIP-712 signature of the task's payment.payer_proof, message.txHash = tx_hash.",
      ),
    ),
  ),
})

/** Body of POST …/tasks/{id}/accept and …/reject: the buyer's decision, signed by the wallet that paid. */
export const DecisionInput = strictFields({
  reason: v.optional(boundedText(MAX_REASON_LENGTH)),
  signature: v.pipe(
    Signature,
    v.description(
      "The paying wallet's EIP-712 signature of the task's review.decision typed data, with message.decision and message.reason as sent.",
    ),
  ),
})
/** Validated decision. */
export type DecisionInput = v.InferOutput<typeof DecisionInput>

const DISPUTE_REASON = `the reason for the dispute, ${DISPUTE_REASON_LENGTH.min}-${DISPUTE_REASON_LENGTH.max} characters (the same text as message.reason signed)`

/** Body of POST …/tasks/{id}/reject: the reason (1-1000 characters; a dispute needs one) and the buyer's signature. */
export const RejectionInput = strictFields(
  {
    reason: v.pipe(
      v.string(`must be ${DISPUTE_REASON}`),
      noControlCharacters(),
      v.trim(),
      v.minLength(DISPUTE_REASON_LENGTH.min, `must not be empty or blank: send ${DISPUTE_REASON}`),
      visibleText(DISPUTE_REASON),
      v.maxLength(
        DISPUTE_REASON_LENGTH.max,
        `must be at most ${DISPUTE_REASON_LENGTH.max} characters: send ${DISPUTE_REASON}`,
      ),
    ),
    signature: DecisionInput.entries.signature,
  },
  undefined,
  { reason: `send ${DISPUTE_REASON}` },
)

/** Body of POST …/tasks/{id}/rating: 1-5 stars, a comment, signed by the wallet that paid. */
export const RatingInput = strictFields({
  score: v.pipe(
    v.number('must be a whole number from 1 to 5'),
    v.integer('must be a whole number from 1 to 5'),
    v.minValue(1, 'must be at least 1'),
    v.maxValue(5, 'must be at most 5'),
  ),
  comment: v.optional(boundedText(MAX_REASON_LENGTH)),
  signature: v.pipe(
    Signature,
    v.description(
      "The paying wallet's EIP-712 signature of the task's rate typed data, with message.score and message.comment as sent.",
    ),
  ),
})

/** Body of POST …/tasks/{id}/complete. */
export const CompleteTaskInput = strictFields({ result_url: HttpUrl })

/** The `Idempotency-Key` header: 1-255 visible ASCII characters. */
export const IdempotencyKey = v.pipe(
  v.string(),
  v.regex(/^[\x21-\x7e]{1,255}$/, 'must be 1-255 visible ASCII characters'),
)

/** Query of GET /api/agents/{name}/tasks. */
export const TaskListInput = strictFields({
  status: v.optional(
    v.picklist(
      [...TASK_STATUSES, 'all'],
      `must be one of ${[...TASK_STATUSES, 'all'].map((status) => `"${status}"`).join(', ')}`,
    ),
  ),
  limit: v.optional(pageNumber(1, 100), 20),
  offset: v.optional(pageNumber(0, 1_000_000_000), 0),
})
