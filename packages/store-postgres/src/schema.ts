import { sql } from 'drizzle-orm'
import {
  bigint,
  bigserial,
  doublePrecision,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  uniqueIndex,
} from 'drizzle-orm/pg-core'

// The same tables, columns and meanings as store-libsql's schema.ts, so a row reads the same in both stores: times are
// epoch milliseconds (bigint read as a JS number), flags 0/1 integers, JSON kept as text. Only what PostgreSQL does
// its own way differs: sequences for `seq`, a trigram index for search, and NOTIFY instead of a change counter row
// (migration 0001, hand-written: drizzle's schema does not hold functions and triggers).

/** A bigint column of epoch milliseconds or base units, read as a JS number (all stay far below 2^53). */
const long = (name: string) => bigint(name, { mode: 'number' })

/** Agents; `name_key` is the lower-cased name, the key names are unique under. */
export const agents = pgTable(
  'agents',
  {
    nameKey: text('name_key').primaryKey(),
    name: text('name').notNull(),
    bio: text('bio'),
    platform: text('platform').notNull(),
    model: text('model'),
    walletAddress: text('wallet_address'),
    basename: text('basename'),
    status: text('status').notNull(),
    apiKeyHash: text('api_key_hash').notNull().unique(),
    pairingCodeHash: text('pairing_code_hash').notNull().unique(),
    pairingCodeUsedAt: long('pairing_code_used_at'),
    pairingCodeExpiresAt: long('pairing_code_expires_at'),
    ownerUsername: text('owner_username'),
    ownerKey: text('owner_key'),
    lastSeen: long('last_seen'),
    lastActiveAt: long('last_active_at').notNull(),
    createdAt: long('created_at').notNull(),
    updatedAt: long('updated_at').notNull(),
    revision: integer('revision').notNull(),
    verifiedMilestones: integer('verified_milestones').notNull().default(0),
    claimedMilestones: integer('claimed_milestones').notNull().default(0),
    completedTasks: integer('completed_tasks').notNull().default(0),
    /** Jobs delivered by their deadline, paid jobs not delivered by it, refunds and disputes on its tasks. */
    onTimeTasks: integer('on_time_tasks').notNull().default(0),
    lateTasks: integer('late_tasks').notNull().default(0),
    refundedTasks: integer('refunded_tasks').notNull().default(0),
    disputedTasks: integer('disputed_tasks').notNull().default(0),
    /** Ratings by paying wallets (count, score sum), the wallets that rated, and the trust's per-wallet votes. */
    ratingCount: integer('rating_count').notNull().default(0),
    ratingSum: integer('rating_sum').notNull().default(0),
    ratedBuyers: integer('rated_buyers').notNull().default(0),
    ratingVotes: integer('rating_votes').notNull().default(0),
    /** Trust: the sum of the rating wallets' vote weights (Trust.ts voteWeight), in thousandths. */
    ratingWeight: integer('rating_weight').notNull().default(0),
    /** Trust: on-time votes of its judged jobs' buyers and how many (Trust.ts trustTotals), in thousandths. */
    reliabilityVotes: integer('reliability_votes').notNull().default(0),
    reliabilityWeight: integer('reliability_weight').notNull().default(0),
    /** Trust: sum over distinct buyer wallets of what each paid for delivered tasks, each capped (base units). */
    trustCreditBaseUnits: long('trust_credit_base_units').notNull().default(0),
    /** Trust: distinct buyer wallets whose on-chain payments paid delivered tasks. */
    payingBuyers: integer('paying_buyers').notNull().default(0),
    /** Trust: the part of that credit from established buyers (Trust.ts isEstablished), and how many they are. */
    establishedCreditBaseUnits: long('established_credit_base_units').notNull().default(0),
    establishedBuyers: integer('established_buyers').notNull().default(0),
    /**
     * Trust: the paid points of those counters (Trust.ts countedPaidTrust), 0 to 70, written with them, so a list sorted
     * by trust reads one column instead of the paid curve's 70 steps. They move only when a payment is credited.
     */
    paidPoints: integer('paid_points').notNull().default(0),
    /** Trust: 1 when the owner claimed the agent with a wallet signature. */
    ownerProven: integer('owner_proven').notNull().default(0),
    /** Where its listing is: active, deprecated (with listing_message), deleted (a tombstone sync returns). */
    listing: text('listing').notNull().default('active'),
    listingMessage: text('listing_message'),
    /** Search: the skills' names, slugs and descriptions joined by U+001F, which q cannot hold. */
    skillText: text('skill_text').notNull().default(''),
    /** The lowest price of its purchasable skills (base units), null when it sells none. */
    cheapestPriceBaseUnits: long('cheapest_price_base_units'),
    /** 1 when it lists a free skill. */
    sellsFree: integer('sells_free').notNull().default(0),
  },
  (table) => [
    index('agents_by_activity').on(sql`${table.lastActiveAt} desc`, table.nameKey),
    index('agents_by_update').on(table.updatedAt, table.nameKey),
    index('agents_by_owner').on(table.ownerKey),
    index('agents_by_age').on(sql`${table.createdAt} desc`, table.nameKey),
    index('agents_by_price').on(
      sql`(${table.cheapestPriceBaseUnits} is null)`,
      table.cheapestPriceBaseUnits,
      sql`${table.lastActiveAt} desc`,
      table.nameKey,
    ),
    index('agents_by_last_seen').on(table.lastSeen),
  ],
)

/** Skills of an agent, in the order the agent listed them. Prices are integers of 10^-6 USDC. */
export const skills = pgTable(
  'skills',
  {
    agentKey: text('agent_key')
      .notNull()
      .references(() => agents.nameKey, { onDelete: 'cascade' }),
    position: integer('position').notNull(),
    slug: text('slug').notNull(),
    name: text('name').notNull(),
    nameKey: text('name_key').notNull().default(''),
    description: text('description'),
    type: text('type').notNull(),
    priceBaseUnits: long('price_base_units'),
    currency: text('currency').notNull(),
    sla: text('sla'),
    /** The promised delivery time after payment (seconds); null: none. */
    slaSeconds: integer('sla_seconds'),
    /** The buyer's review window after a delivery (seconds); 0: a delivery completes at once. */
    reviewSeconds: integer('review_seconds').notNull().default(0),
    /** When its deliveries' results are shown to buyers: 'on_delivery' or 'after_acceptance'. */
    reveal: text('reveal').notNull().default('on_delivery'),
    url: text('url'),
    inputSchema: text('input_schema'),
  },
  (table) => [
    primaryKey({ columns: [table.agentKey, table.slug] }),
    index('skills_by_slug').on(table.slug),
    index('skills_by_name').on(table.nameKey),
    index('skills_paid').on(table.agentKey, table.slug).where(sql`${table.type} = 'purchasable'`),
  ],
)

/** Milestones; `seq` keeps the order they were recorded in. */
export const milestones = pgTable(
  'milestones',
  {
    seq: bigserial('seq', { mode: 'number' }).primaryKey(),
    id: text('id').notNull(),
    agentKey: text('agent_key')
      .notNull()
      .references(() => agents.nameKey, { onDelete: 'cascade' }),
    date: text('date').notNull(),
    title: text('title').notNull(),
    description: text('description'),
    proof: text('proof'),
    trust: text('trust').notNull(),
    createdAt: long('created_at').notNull(),
  },
  (table) => [
    index('milestones_by_agent_date').on(table.agentKey, sql`${table.date} desc`, sql`${table.seq} desc`),
  ],
)

/** Community users; `name_key` is the lower-cased username. `showcase` is JSON text. */
export const users = pgTable(
  'users',
  {
    nameKey: text('name_key').primaryKey(),
    username: text('username').notNull(),
    walletAddress: text('wallet_address').notNull(),
    bio: text('bio'),
    showcase: text('showcase').notNull(),
    inviteCode: text('invite_code').notNull().unique(),
    createdAt: long('created_at').notNull(),
    updatedAt: long('updated_at').notNull(),
  },
  (table) => [index('users_by_age').on(sql`${table.createdAt} desc`, table.nameKey)],
)

/**
 * The append-only live feed. `data` is JSON text of public fields only. Unlike SQLite, PostgreSQL commits concurrent
 * transactions out of the order their sequence numbers were drawn in, so `seq` is not the public id: `position` is,
 * given after commit in commit order by the feed sequencer (feedSequencer.ts), and null until then. `xid` is the
 * writing transaction, which the sequencer waits for.
 */
export const events = pgTable(
  'events',
  {
    seq: bigserial('seq', { mode: 'number' }).primaryKey(),
    kind: text('kind').notNull(),
    agent: text('agent').notNull(),
    at: long('at').notNull(),
    summary: text('summary').notNull(),
    data: text('data').notNull(),
    /** The task a task event is about (webhooks fan out by it); never shown. */
    taskId: text('task_id'),
    xid: long('xid').notNull().default(sql`(pg_current_xact_id()::text)::bigint`),
    position: long('position').unique(),
  },
  (table) => [index('events_unpositioned').on(table.seq).where(sql`${table.position} is null`)],
)

/** Tasks (orders), with the same unique claims as store-libsql's. Amounts are 10^-6 USDC. */
export const tasks = pgTable(
  'tasks',
  {
    id: text('id').primaryKey(),
    agentKey: text('agent_key')
      .notNull()
      .references(() => agents.nameKey, { onDelete: 'cascade' }),
    skillName: text('skill_name').notNull(),
    skillSlug: text('skill_slug').notNull(),
    sla: text('sla').notNull(),
    status: text('status').notNull(),
    priceBaseUnits: long('price_base_units').notNull(),
    payTo: text('pay_to'),
    params: text('params'),
    buyer: text('buyer'),
    /** The buyer's name key: its budget's day is summed over these (Budget.ts). */
    buyerKey: text('buyer_key'),
    buyerEmail: text('buyer_email'),
    buyerWallet: text('buyer_wallet'),
    paymentMethod: text('payment_method'),
    txHash: text('tx_hash').unique(),
    escrowTaskId: text('escrow_task_id'),
    paidAmountBaseUnits: text('paid_amount_base_units'),
    paidFrom: text('paid_from'),
    paidAt: long('paid_at'),
    pendingTxHash: text('pending_tx_hash'),
    recheckAttempts: integer('recheck_attempts'),
    nextRecheckAt: long('next_recheck_at'),
    /** While a re-check runs: the end of its lease (in flight until settled or then); null otherwise. */
    recheckLeasedUntil: long('recheck_leased_until'),
    pendingSignature: text('pending_signature'),
    clientKey: text('client_key'),
    expiresAt: long('expires_at'),
    resultUrl: text('result_url'),
    idempotencyKey: text('idempotency_key'),
    requestFingerprint: text('request_fingerprint'),
    firstStatus: integer('first_status'),
    firstBody: text('first_body'),
    createdAt: long('created_at').notNull(),
    completedAt: long('completed_at'),
    /** The job (docs/jobs.md): SLA and review window when ordered (seconds), deadlines and deliveries (epoch ms). */
    slaSeconds: integer('sla_seconds'),
    reviewSeconds: integer('review_seconds').notNull().default(0),
    /** The skill's reveal when ordered: the result is shown at once, or only once completed. */
    reveal: text('reveal').notNull().default('on_delivery'),
    dueAt: long('due_at'),
    deliveredAt: long('delivered_at'),
    reviewUntil: long('review_until'),
    outcome: text('outcome'),
    /** Refunds and disputes: a JSON array, only ever appended to. */
    entries: text('entries').notNull().default('[]'),
    /** What its refund records gave back (base units). */
    refundedBaseUnits: long('refunded_base_units').notNull().default(0),
    /** Its job id on the job escrow (keccak256 of the id), and a funded job's key and terms (JSON). */
    jobId: text('job_id'),
    escrowJob: text('escrow_job'),
    /** The rating by the wallet that paid (JSON), and when it was made (epoch ms). */
    rating: text('rating'),
    ratedAt: long('rated_at'),
  },
  (table) => [
    index('tasks_by_buyer').on(table.buyerKey, table.createdAt).where(sql`${table.buyerKey} is not null`),
    index('tasks_by_agent').on(table.agentKey, table.status, sql`${table.createdAt} desc`),
    uniqueIndex('tasks_idempotency_by_client').on(table.agentKey, table.clientKey, table.idempotencyKey),
    index('tasks_due_rechecks').on(table.nextRecheckAt),
    uniqueIndex('tasks_escrow_deposit').on(table.paidFrom, table.escrowTaskId),
    index('tasks_expiring').on(table.status, table.expiresAt),
    // The job sweep: paid tasks past their deadline, deliveries past their review window.
    index('tasks_due').on(table.status, table.dueAt).where(sql`${table.dueAt} is not null`),
    uniqueIndex('tasks_by_job_id').on(table.jobId).where(sql`${table.jobId} is not null`),
    // The job escrow's events name a job by its key, kept as the payment's escrow task id.
    index('tasks_by_escrow_key').on(table.escrowTaskId).where(sql`${table.escrowJob} is not null`),
    index('tasks_ratings').on(table.agentKey, table.ratedAt).where(sql`${table.ratedAt} is not null`),
    index('tasks_in_review').on(table.status, table.reviewUntil).where(sql`${table.reviewUntil} is not null`),
    // A buyer wallet's decisions across the market (Store.buyerDecisions): only decided deliveries are indexed.
    index('tasks_by_deciding_wallet')
      .on(sql`lower(coalesce(${table.paidFrom}, ${table.buyerWallet}))`)
      .where(sql`${table.outcome} in ('accepted', 'rejected')`),
    index('tasks_checks_by_client').on(table.clientKey).where(sql`${table.pendingTxHash} is not null`),
    index('tasks_rechecks_in_flight')
      .on(table.recheckLeasedUntil)
      .where(sql`${table.recheckLeasedUntil} is not null and ${table.status} = 'pending_payment'`),
  ],
)

/** Trust: what each buyer wallet paid an agent for delivered tasks (base units), to credit distinct buyers. */
export const trustBuyers = pgTable(
  'trust_buyers',
  {
    agentKey: text('agent_key')
      .notNull()
      .references(() => agents.nameKey, { onDelete: 'cascade' }),
    wallet: text('wallet').notNull(),
    paidBaseUnits: long('paid_base_units').notNull(),
    /** That wallet's ratings of the agent's tasks: how many, and the sum of their scores. */
    ratingCount: integer('rating_count').notNull().default(0),
    ratingSum: integer('rating_sum').notNull().default(0),
    /** That wallet's jobs of the agent judged on time (delivered by the deadline) and late (missed). */
    onTimeJobs: integer('on_time_jobs').notNull().default(0),
    lateJobs: integer('late_jobs').notNull().default(0),
    /** 1 once the wallet paid this agent as an established buyer (Trust.ts isEstablished); it stays so. */
    established: integer('established').notNull().default(0),
    /** When this wallet was first credited to this agent (epoch ms); its earliest over agents is its age. */
    firstPaidAt: long('first_paid_at'),
  },
  // A buyer's history over every agent it paid (Trust.ts BuyerHistory) is read by wallet.
  (table) => [
    primaryKey({ columns: [table.agentKey, table.wallet] }),
    index('trust_buyers_by_wallet').on(table.wallet),
  ],
)

/** Small JSON values by key: settings kept by the server (the generated MPP secret) and MPP replay markers. */
export const kv = pgTable('kv', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
})

/** Order e-mails taken, by a key of their sender and Message-ID: a message delivered twice is taken once. */
export const orderMails = pgTable('order_mails', {
  key: text('key').primaryKey(),
  taskId: text('task_id'),
  replyId: text('reply_id').notNull(),
  receivedAt: long('received_at').notNull(),
})

/** E-mail to send, written with the change that caused it (store-libsql's schema.ts says how it is leased). */
export const outbox = pgTable(
  'outbox',
  {
    id: text('id').primaryKey(),
    fromAddress: text('from_address').notNull(),
    toAddress: text('to_address').notNull(),
    /** The fair claim's tenant (the recipient) and endpoint (its domain): core OrderMail.ts mailQueueKeys. */
    tenant: text('tenant').notNull().default(''),
    endpoint: text('endpoint').notNull().default(''),
    subject: text('subject').notNull(),
    body: text('body').notNull(),
    messageId: text('message_id').notNull(),
    inReplyTo: text('in_reply_to'),
    references: text('references').notNull(),
    headers: text('headers').notNull(),
    createdAt: long('created_at').notNull(),
    attempts: integer('attempts').notNull(),
    nextAttemptAt: long('next_attempt_at').notNull(),
    /** The end of a running attempt's lease (in flight until settled or then); null between attempts. */
    leasedUntil: long('leased_until'),
    sentAt: long('sent_at'),
    failedAt: long('failed_at'),
    lastError: text('last_error'),
  },
  (table) => [
    index('outbox_due')
      .on(table.nextAttemptAt)
      .where(sql`${table.sentAt} is null and ${table.failedAt} is null`),
    // The fair claim walks the endpoints with pending mail and reads each one's first due entries.
    index('outbox_pending_by_endpoint')
      .on(table.endpoint, table.nextAttemptAt, table.id)
      .where(sql`${table.sentAt} is null and ${table.failedAt} is null`),
    index('outbox_in_flight')
      .on(table.leasedUntil)
      .where(sql`${table.leasedUntil} is not null and ${table.sentAt} is null and ${table.failedAt} is null`),
  ],
)

/** Rate-limit token buckets shared by every node on this database: `tat` is the theoretical arrival time in ms. */
export const rateBuckets = pgTable('rate_buckets', {
  key: text('key').primaryKey(),
  tat: doublePrecision('tat').notNull(),
})

/** Webhook endpoints: a seller's (every task of `agent_key`, `task_id` null) or a buyer's (one task). */
export const webhooks = pgTable(
  'webhooks',
  {
    id: text('id').primaryKey(),
    agentKey: text('agent_key').notNull(),
    taskId: text('task_id'),
    /** The feed's newest event id when it was added: it gets only later events. */
    afterEventId: text('after_event_id').notNull().default('0'),
    /** Deliveries not queued because the endpoint's backlog was full (core WEBHOOK_BACKLOG_MAX). */
    droppedDeliveries: integer('dropped_deliveries').notNull().default(0),
    /** For a task's endpoint, the client that added it (core clientKeyOf; '' when unknown): its fair-share tenant. */
    addedBy: text('added_by').notNull().default(''),
    url: text('url').notNull(),
    /** The event types asked for (JSON array). */
    events: text('events').notNull(),
    createdAt: long('created_at').notNull(),
  },
  (table) => [index('webhooks_by_owner').on(table.agentKey, table.taskId)],
)

/**
 * The webhook outbox: one row per event and endpoint (unique, so fanning an event out twice sends it once), kept
 * with its attempts until delivered or given up.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: text('id').primaryKey(),
    webhookId: text('webhook_id')
      .notNull()
      .references(() => webhooks.id, { onDelete: 'cascade' }),
    /** Whose delivery it is, for the fair claim (core FairQueue.ts): the seller, or a task endpoint's buyer. */
    tenant: text('tenant').notNull().default(''),
    eventId: text('event_id').notNull(),
    /** Where it goes (the endpoint's URL when it was queued). */
    url: text('url').notNull(),
    type: text('type').notNull(),
    payload: text('payload').notNull(),
    createdAt: long('created_at').notNull(),
    attempts: integer('attempts').notNull(),
    nextAttemptAt: long('next_attempt_at').notNull(),
    /** The end of a running attempt's lease (in flight until settled or then); null between attempts. */
    leasedUntil: long('leased_until'),
    deliveredAt: long('delivered_at'),
    failedAt: long('failed_at'),
    lastStatus: integer('last_status'),
    lastError: text('last_error'),
    lastLatencyMs: integer('last_latency_ms'),
  },
  (table) => [
    uniqueIndex('webhook_deliveries_once').on(table.webhookId, table.eventId),
    index('webhook_deliveries_due')
      .on(table.nextAttemptAt)
      .where(sql`${table.deliveredAt} is null and ${table.failedAt} is null`),
    index('webhook_deliveries_latest').on(table.webhookId, table.createdAt),
    // The fair claim walks the endpoints with pending deliveries and reads each one's first due (and the backlog cap
    // counts an endpoint's pending ones) without reading the rest of the backlog.
    index('webhook_deliveries_pending_by_endpoint')
      .on(table.webhookId, table.nextAttemptAt, table.id)
      .where(sql`${table.deliveredAt} is null and ${table.failedAt} is null`),
    index('webhook_deliveries_in_flight')
      .on(table.leasedUntil)
      .where(
        sql`${table.leasedUntil} is not null and ${table.deliveredAt} is null and ${table.failedAt} is null`,
      ),
  ],
)
