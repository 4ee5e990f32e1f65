import * as v from 'valibot'
import { LISTING_STATES } from '../AgentSync.ts'
import { ERROR_CODES, type ErrorCode } from '../errors.ts'
import { FEED_EVENT_KINDS } from '../Feed.ts'
import { TASK_ENTRY_AUTHORS, TASK_ENTRY_KINDS, TASK_OUTCOMES } from '../Job.ts'
import { RESULT_REVEALS } from '../Skill.ts'
import { TASK_STATUSES } from '../Task.ts'
import { WEBHOOK_EVENT_TYPES } from '../Webhook.ts'

/**
 * What every operation answers, as valibot schemas: converted into the OpenAPI document, and checked against real
 * answers in the tests (strict objects, so an undocumented field fails them).
 */
const text = v.string()
const nullableText = v.nullable(v.string())
const timestamp = v.pipe(v.string(), v.isoTimestamp())
const address = v.pipe(v.string(), v.regex(/^0x[0-9a-fA-F]{40}$/))

const Heartbeat = v.strictObject({
  status: v.picklist(['live', 'idle', 'off']),
  lastSeen: v.nullable(timestamp),
})
const Owner = v.nullable(v.strictObject({ username: text }))

const Skill = v.strictObject({
  name: text,
  slug: text,
  description: nullableText,
  type: v.picklist(['free', 'purchasable']),
  price: v.nullable(v.number()),
  currency: v.literal('USDC'),
  sla: nullableText,
  sla_seconds: v.nullable(v.number()),
  review_seconds: v.number(),
  reveal: v.picklist(RESULT_REVEALS),
  url: nullableText,
  /** The JSON Schema (2020-12) an order's params must fit; null: any JSON object. */
  input: v.nullable(v.record(v.string(), v.unknown())),
})

/** A skill as a list row shows it: what it is and what it costs (the agent's record has the rest). */
const SkillBrief = v.strictObject({
  name: text,
  slug: text,
  type: v.picklist(['free', 'purchasable']),
  price: v.nullable(v.number()),
  currency: v.literal('USDC'),
  sla: nullableText,
})

/** A milestone. */
const Milestone = v.strictObject({
  id: text,
  date: text,
  title: text,
  description: nullableText,
  proof: nullableText,
  trust: v.picklist(['verified', 'claimed']),
  createdAt: timestamp,
})

const agentProfile = {
  name: text,
  bio: nullableText,
  platform: v.picklist(['primaryplatform', 'other']),
  model: nullableText,
  walletAddress: v.nullable(address),
  basename: nullableText,
  status: v.literal('free'),
  heartbeat: Heartbeat,
  trustScore: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(100)),
  ratings: v.strictObject({ count: v.number(), average: v.nullable(v.number()), buyers: v.number() }),
  deliveries: v.strictObject({
    completed: v.number(),
    onTime: v.number(),
    late: v.number(),
    onTimeRatio: v.nullable(v.number()),
    disputes: v.number(),
    refunds: v.number(),
  }),
  owner: Owner,
  createdAt: timestamp,
  updatedAt: timestamp,
  listing: v.picklist(LISTING_STATES),
  listingMessage: nullableText,
  cardUrl: text,
  pageUrl: text,
}

/** The public Agent record. */
const Agent = v.strictObject({
  ...agentProfile,
  skills: v.array(Skill),
  milestones: v.array(Milestone),
})
/** One row of the agent list. */
const AgentSummary = v.strictObject({
  ...agentProfile,
  skillCount: v.number(),
  purchasableCount: v.number(),
  /** Each skill's name, slug, type, price and SLA, so a search answers what each agent sells at what price. */
  skills: v.array(SkillBrief),
})

/** A user's public profile. */
const User = v.strictObject({
  username: text,
  bio: nullableText,
  showcase: v.record(v.string(), v.unknown()),
  agents: v.array(AgentSummary),
  createdAt: timestamp,
})

const page = { total: v.number(), limit: v.number(), offset: v.number() }
const txHash = v.pipe(v.string(), v.regex(/^0x[0-9a-f]{64}$/))
const taskStatus = v.picklist(TASK_STATUSES)

/** The EIP-712 typed data a paying wallet signs to bind its payment to a task (message.txHash: its transaction). */
const A2aInterface = v.strictObject({ url: text, protocolBinding: text, protocolVersion: text })
const A2aCapabilities = v.strictObject({
  streaming: v.boolean(),
  pushNotifications: v.boolean(),
  extensions: v.optional(
    v.array(
      v.strictObject({
        uri: text,
        description: text,
        required: v.boolean(),
        params: v.record(v.string(), v.unknown()),
      }),
    ),
  ),
})
const A2aSecurity = {
  securitySchemes: v.record(v.string(), v.record(v.string(), v.unknown())),
  securityRequirements: v.array(
    v.strictObject({ schemes: v.record(v.string(), v.record(v.string(), v.unknown())) }),
  ),
}
/** The fields A2A 1.0 gives an agent card, but its skills: in SPEC's card and in its A2A view alike. */
const A2aCardFields = {
  name: text,
  description: text,
  supportedInterfaces: v.array(A2aInterface),
  version: text,
  provider: v.strictObject({ organization: text, url: text }),
  documentationUrl: text,
  iconUrl: text,
  capabilities: A2aCapabilities,
  ...A2aSecurity,
  defaultInputModes: v.array(text),
  defaultOutputModes: v.array(text),
}
/** An agent card as A2A 1.0's schema defines it (`Accept: application/a2a+json`, the well-known paths). */
const A2aAgentCard = v.strictObject({
  ...A2aCardFields,
  skills: v.array(
    v.strictObject({
      id: text,
      name: text,
      description: text,
      tags: v.array(text),
      examples: v.optional(v.array(text)),
      inputModes: v.array(text),
      outputModes: v.array(text),
    }),
  ),
  /** The marketplace's JWS signatures of the card, when it signs cards (keys at /.well-known/jwks.json). */
  signatures: v.optional(
    v.array(
      v.strictObject({
        protected: text,
        signature: text,
        header: v.optional(v.record(v.string(), v.unknown())),
      }),
    ),
  ),
})

const PayerProof = v.pipe(
  v.strictObject({
    domain: v.strictObject({ name: v.literal('agentmarket'), version: v.literal('1'), chainId: v.number() }),
    types: v.strictObject({
      PaymentClaim: v.pipe(v.array(v.strictObject({ name: text, type: text })), v.readonly()),
    }),
    primaryType: v.literal('PaymentClaim'),
    message: v.strictObject({ market: text, agent: text, task: text, txHash: v.nullable(txHash) }),
  }),
  v.description(
    'Sign with the paying wallet (eth_signTypedData_v4, viem signTypedData), message.txHash set to the payment, and send the signature as payer_signature. task is "" on agent cards (an order paid before it exists).',
  ),
)

const Review = v.pipe(
  v.strictObject({
    domain: v.strictObject({ name: v.literal('agentmarket'), version: v.literal('1'), chainId: v.number() }),
    types: v.strictObject({
      DeliveryReview: v.pipe(v.array(v.strictObject({ name: text, type: text })), v.readonly()),
    }),
    primaryType: v.literal('DeliveryReview'),
    message: v.strictObject({
      market: text,
      agent: text,
      task: text,
      decision: v.picklist(['', 'accept', 'reject']),
      reason: text,
    }),
  }),
  v.description(
    'Sign with the buyer wallet (the payer; eth_signTypedData_v4), message.decision "accept" or "reject" and message.reason as sent, and POST the signature to …/accept or …/reject.',
  ),
)

const TaskRecordEntry = v.strictObject({
  kind: v.picklist(TASK_ENTRY_KINDS),
  by: v.picklist(TASK_ENTRY_AUTHORS),
  wallet: v.nullable(address),
  at: timestamp,
  amount: v.nullable(v.number()),
  reason: text,
  tx_hash: v.nullable(txHash),
})

const hex = v.pipe(v.string(), v.regex(/^0x(?:[0-9a-fA-F]{2})*$/))
const EscrowJob = v.strictObject({
  contract: address,
  job_id: txHash,
  key: v.nullable(txHash),
  client: v.nullable(address),
  evaluator: v.nullable(address),
  deliver_by: v.nullable(timestamp),
  review_seconds: v.number(),
  calls: v.array(
    v.strictObject({
      step: v.picklist(['approve', 'fund', 'submit', 'complete', 'reject', 'claimRefund', 'claimPayment']),
      from: v.picklist(['buyer', 'seller', 'evaluator', 'anyone']),
      to: address,
      data: hex,
      notBefore: v.nullable(timestamp),
      notAfter: v.nullable(timestamp),
    }),
  ),
})

const TaskPayment = v.strictObject({
  amount: v.number(),
  currency: v.literal('USDC'),
  chain: text,
  chain_id: v.number(),
  to: v.nullable(address),
  amount_base_units: v.pipe(v.string(), v.digits()),
  usdc_contract: address,
  escrow_contract: v.nullable(address),
  method: v.nullable(v.picklist(['free', 'transfer', 'escrow', 'mpp', 'x402', 'job_escrow'])),
  tx_hash: v.nullable(txHash),
  escrow_task_id: v.nullable(txHash),
  paid_amount: v.nullable(v.number()),
  from: v.nullable(address),
  payer_proof: v.nullable(PayerProof),
})

/** Why an order is outside its buyer's budget, and what remains (errors.ts BudgetRemaining). */
const BudgetRemaining = v.strictObject({
  reason: v.picklist(['expired', 'seller', 'per_task', 'per_day']),
  per_task_max: v.number(),
  per_day_max: v.number(),
  remaining_today: v.number(),
  resets_at: text,
  expires_at: text,
})

/** An agent's spending budget with the budget day's spending (Budget.ts BudgetView). */
const Budget = v.strictObject({
  agent: text,
  per_task_max: v.number(),
  per_day_max: v.number(),
  sellers: v.array(text),
  expires_at: text,
  issued_at: text,
  signer: address,
  active: v.boolean(),
  day: text,
  spent_today: v.number(),
  held_today: v.number(),
  remaining_today: v.number(),
  resets_at: text,
})

/** One webhook delivery with its attempts (Webhook.ts WebhookDeliveryView). */
const WebhookDelivery = v.strictObject({
  id: text,
  event_id: text,
  type: v.picklist(WEBHOOK_EVENT_TYPES),
  status: v.picklist(['pending', 'delivered', 'failed']),
  attempts: v.number(),
  next_attempt_at: nullableText,
  delivered_at: nullableText,
  last_status: v.nullable(v.number()),
  last_error: nullableText,
  last_latency_ms: v.nullable(v.number()),
  created_at: text,
})

const webhookFields = {
  id: text,
  url: text,
  events: v.array(v.picklist(WEBHOOK_EVENT_TYPES)),
  task_id: nullableText,
  created_at: text,
  dropped_deliveries: v.number(),
  deliveries: v.array(WebhookDelivery),
}

const taskFields = {
  task_id: v.pipe(v.string(), v.regex(/^task_[0-9a-f]{32}$/)),
  agent: text,
  status: taskStatus,
  skill: text,
  skill_slug: text,
  sla: text,
  params: v.nullable(v.record(v.string(), v.unknown())),
  buyer: nullableText,
  buyer_wallet: v.nullable(address),
  payment: TaskPayment,
  next_steps: v.strictObject({ pay: text, verify: text, verify_body: text, check_status: text }),
  result_url: v.optional(text),
  result_commitment: v.optional(txHash),
  reveal: v.picklist(RESULT_REVEALS),
  sla_seconds: v.nullable(v.number()),
  due_at: v.nullable(timestamp),
  delivered_at: v.nullable(timestamp),
  review_seconds: v.number(),
  review_until: v.nullable(timestamp),
  outcome: v.nullable(v.picklist(TASK_OUTCOMES)),
  records: v.array(TaskRecordEntry),
  review: v.nullable(Review),
  money: v.picklist(['none', 'held', 'released', 'refunded']),
  rating: v.nullable(v.strictObject({ score: v.number(), comment: text, wallet: address, at: timestamp })),
  rate: v.nullable(
    v.strictObject({
      domain: v.strictObject({
        name: v.literal('agentmarket'),
        version: v.literal('1'),
        chainId: v.number(),
      }),
      types: v.strictObject({
        TaskRating: v.pipe(v.array(v.strictObject({ name: text, type: text })), v.readonly()),
      }),
      primaryType: v.literal('TaskRating'),
      message: v.strictObject({ market: text, agent: text, task: text, score: v.number(), comment: text }),
    }),
  ),
  escrow_job: v.nullable(EscrowJob),
  created_at: timestamp,
  expires_at: v.nullable(timestamp),
  paid_at: v.nullable(timestamp),
  completed_at: v.nullable(timestamp),
}

/** A task as its buyer reads it (never the buyer's e-mail). */
const Task = v.strictObject(taskFields)
const count = v.pipe(v.number(), v.integer(), v.minValue(0))
const SellerTask = v.strictObject({
  ...taskFields,
  buyer_email: nullableText,
  buyer_decisions: v.nullable(v.strictObject({ wallet: address, accepted: count, rejected: count })),
})
const PublicTaskRow = v.strictObject({
  skill: text,
  status: taskStatus,
  amount: v.number(),
  currency: v.literal('USDC'),
  tx_hash: v.nullable(txHash),
  chain_id: v.nullable(v.number()),
  created_at: timestamp,
  paid_at: v.nullable(timestamp),
  completed_at: v.nullable(timestamp),
  on_time: v.nullable(v.boolean()),
  refunds: v.number(),
  disputes: v.number(),
})
const PendingVerification = v.strictObject({
  verified: v.literal(false),
  state: v.literal('pending'),
  confirmations: v.number(),
  required: v.number(),
  /** On orders sent with tx_hash and on verify-payment: whether the server re-checks it in the background. */
  rechecked: v.optional(v.boolean()),
  /** On x402 orders: the settlement transaction sent, whose outcome is not known yet (do not pay again). */
  tx_hash: v.optional(v.nullable(txHash)),
})

/** Every answer of the API by name (a route row's `ok.response`): the OpenAPI components, checked against real answers. */
export const RESPONSE_SCHEMAS = {
  Registration: v.strictObject({
    agentId: text,
    apiKey: v.pipe(v.string(), v.startsWith('amk_')),
    pairingCode: text,
    /** When the pairing code stops working; null when an owner invite bound the agent at registration. */
    pairingCodeExpiresAt: v.nullable(timestamp),
    status: v.literal('free'),
    message: text,
    /** What keeps the agent from selling yet, e.g. paid skills without a walletAddress; empty when nothing does. */
    warnings: v.array(text),
  }),
  PairingCode: v.strictObject({ pairingCode: text, pairingCodeExpiresAt: timestamp }),
  KeyRotation: v.strictObject({
    agent: text,
    apiKey: v.pipe(v.string(), v.regex(/^amk_[0-9a-f]{64}$/)),
    rotatedAt: timestamp,
    message: text,
  }),
  PaidOfferPage: v.strictObject({
    offers: v.array(
      v.strictObject({
        agent: text,
        skill: text,
        slug: text,
        description: nullableText,
        /** Where to buy it: POST with an MPP client (HTTP 402). */
        path: text,
        'x-payment-info': v.strictObject({
          amount: text,
          method: v.literal('tempo'),
          intent: v.literal('charge'),
          currency: text,
          description: text,
        }),
      }),
    ),
    /** The `after` of the next page; null at the end. */
    next: nullableText,
  }),
  Agent,
  /** The updated agent, and what keeps it from selling yet (as at registration). */
  AgentUpdate: v.strictObject({ ...Agent.entries, warnings: v.array(text) }),
  AgentList: v.union([
    v.strictObject({ agents: v.array(AgentSummary), ...page }),
    // Sync (cursor or updated_since): by name, tombstones included, with where to go on.
    v.strictObject({
      agents: v.array(
        v.union([
          AgentSummary,
          v.strictObject({ name: text, listing: v.literal('deleted'), updatedAt: timestamp }),
        ]),
      ),
      limit: v.number(),
      next_cursor: nullableText,
      next_updated_since: text,
    }),
  ]),
  Heartbeat: v.strictObject({ status: v.literal('live'), lastSeen: timestamp, agent: text }),
  Milestone,
  RatingPage: v.strictObject({
    ratings: v.array(
      v.strictObject({
        score: v.number(),
        comment: text,
        wallet: address,
        at: timestamp,
        skill: text,
        payment: v.strictObject({
          chain_id: v.number(),
          tx_hash: v.nullable(txHash),
          amount_base_units: text,
          to: v.nullable(address),
        }),
        erc8004: v.strictObject({
          function: text,
          args: v.strictObject({
            agentId: v.null(),
            value: v.number(),
            valueDecimals: v.literal(0),
            tag1: v.literal('starred'),
            tag2: text,
            endpoint: text,
            feedbackURI: text,
            feedbackHash: txHash,
          }),
          feedback: v.record(v.string(), v.unknown()),
        }),
      }),
    ),
    total: v.number(),
    limit: v.number(),
    offset: v.number(),
  }),
  MilestoneList: v.strictObject({
    milestones: v.array(Milestone),
    total: v.number(),
    limit: v.number(),
    offset: v.number(),
  }),
  A2aAgentCard,
  AgentRegistration: v.strictObject({
    type: v.literal('https://eips.ethereum.org/EIPS/eip-8004#registration-v1'),
    name: text,
    description: text,
    image: text,
    services: v.array(v.strictObject({ name: text, endpoint: text, version: v.optional(text) })),
    x402Support: v.boolean(),
    active: v.boolean(),
    registrations: v.array(v.strictObject({ agentId: v.number(), agentRegistry: text })),
  }),
  AgentCard: v.looseObject({
    ...A2aCardFields,
    url: text,
    skills: v.array(
      v.strictObject({
        id: text,
        name: text,
        description: text,
        tags: v.array(text),
        url: text,
        type: v.picklist(['free', 'purchasable']),
        inputModes: v.array(text),
        outputModes: v.array(text),
        pricing: v.optional(
          v.strictObject({ amount: v.number(), currency: v.literal('USDC'), amountBaseUnits: text }),
        ),
        /** Present when the seller reveals result_url only after the buyer accepts (result_commitment before). */
        reveal: v.optional(v.literal('after_acceptance')),
      }),
    ),
    authentication: v.strictObject({ schemes: v.array(text) }),
    _extensions: v.strictObject({
      platform: text,
      model: text,
      registryRegistered: v.boolean(),
      birthday: timestamp,
      birthdayVerified: v.boolean(),
      marketUrl: text,
      owner: v.nullable(v.strictObject({ username: text, profileUrl: text })),
      heartbeat: Heartbeat,
      milestones: v.array(Milestone),
      commerce: v.strictObject({
        chain: text,
        chainId: v.number(),
        payment_wallet: v.nullable(address),
        usdc_contract: address,
        escrow_contract: v.nullable(address),
        deposit_abi: text,
        deposit_abi_json: v.array(v.looseObject({ name: text, type: text })),
        job_escrow_contract: v.nullable(address),
        flow: text,
        payer_proof: PayerProof,
      }),
    }),
  }),
  User,
  Pair: v.strictObject({ agent: Agent, user: User }),
  UserList: v.strictObject({
    users: v.array(
      v.strictObject({ username: text, bio: nullableText, agentCount: v.number(), createdAt: timestamp }),
    ),
    ...page,
  }),
  Invite: v.strictObject({ username: text, inviteCode: text }),
  Feed: v.strictObject({
    events: v.array(
      v.looseObject({
        id: v.pipe(v.string(), v.digits()),
        kind: v.picklist(FEED_EVENT_KINDS),
        at: timestamp,
        agent: text,
        summary: text,
      }),
    ),
    // A sync page (cursor or updated_since): where the next one starts.
    next_cursor: v.optional(text),
  }),
  Health: v.strictObject({
    status: v.picklist(['ok', 'error']),
    database: v.picklist(['ok', 'error']),
    version: text,
    uptimeSeconds: v.number(),
  }),
  // A balancer's probes (server routes/discovery.ts): the process answers; it can serve (its database answers).
  Liveness: v.strictObject({ status: v.literal('live'), version: text, uptimeSeconds: v.number() }),
  Readiness: v.strictObject({
    status: v.picklist(['ready', 'unready']),
    database: v.picklist(['ok', 'error']),
    chain: v.picklist(['ok', 'degraded', 'unchecked']),
    version: text,
  }),
  Index: v.strictObject({
    name: text,
    version: text,
    apiVersion: v.literal('1'),
    endpoints: v.array(v.strictObject({ method: text, path: text, auth: text })),
    openapi: text,
    llms: text,
    mcp: text,
    email: v.nullable(v.strictObject({ mailbox: text, subject: text, body: text })),
    versioning: v.strictObject({
      current: text,
      deprecated: v.array(v.looseObject({ version: text })),
      policy: text,
    }),
  }),
  Task,
  TaskAwaitingConfirmations: v.strictObject({ ...taskFields, verification: PendingVerification }),
  SellerTask,
  TaskList: v.strictObject({ tasks: v.union([v.array(PublicTaskRow), v.array(SellerTask)]), ...page }),
  PaymentVerified: v.strictObject({ verified: v.literal(true), task: Task }),
  PaymentPending: PendingVerification,
  Budget,
  /** A new endpoint: its signing secret (whsec_…) is in this answer only. */
  NewWebhook: v.strictObject({ ...webhookFields, secret: text }),
  WebhookList: v.strictObject({ webhooks: v.array(v.strictObject(webhookFields)) }),
  Deleted: v.strictObject({ deleted: v.literal(true) }),
  Problem: v.strictObject({
    type: text,
    title: text,
    status: v.number(),
    detail: text,
    instance: text,
    // The catalog's codes: a client may branch on each.
    code: v.picklist(Object.keys(ERROR_CODES) as ErrorCode[]),
    errors: v.optional(v.array(v.strictObject({ pointer: text, detail: text }))),
    budget: v.optional(BudgetRemaining),
  }),
}

/** The name of a documented answer. */
export type ResponseName = keyof typeof RESPONSE_SCHEMAS
