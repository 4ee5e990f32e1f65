import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/** Agents; `name_key` is the lower-cased name, the key names are unique under. Times are epoch milliseconds. */
export const agents = sqliteTable(
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
    pairingCodeUsedAt: integer('pairing_code_used_at'),
    pairingCodeExpiresAt: integer('pairing_code_expires_at'),
    ownerUsername: text('owner_username'),
    ownerKey: text('owner_key'),
    lastSeen: integer('last_seen'),
    lastActiveAt: integer('last_active_at').notNull(),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
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
    trustCreditBaseUnits: integer('trust_credit_base_units').notNull().default(0),
    /** Trust: distinct buyer wallets whose on-chain payments paid delivered tasks. */
    payingBuyers: integer('paying_buyers').notNull().default(0),
    /** Trust: the part of that credit from established buyers (Trust.ts isEstablished), and how many they are. */
    establishedCreditBaseUnits: integer('established_credit_base_units').notNull().default(0),
    establishedBuyers: integer('established_buyers').notNull().default(0),
    /**
     * Trust: the paid points of those counters (Trust.ts countedPaidTrust), 0 to 70, written with them, so a list sorted
     * by trust reads one column instead of the paid curve's 70 steps. They move only when a payment is credited.
     */
    paidPoints: integer('paid_points').notNull().default(0),
    /** Trust: 1 when the owner claimed the agent with a wallet signature (claims before that proof count 0). */
    ownerProven: integer('owner_proven').notNull().default(0),
    /** Where its listing is: active, deprecated (with listing_message), deleted (a tombstone sync returns). */
    listing: text('listing').notNull().default('active'),
    listingMessage: text('listing_message'),
    /**
     * Search: the skills' names, slugs and descriptions joined by U+001F, which q cannot hold, so a match never spans
     * two; indexed with name and bio, lower-cased, by agent_search (migration 0018). Written with the skills.
     */
    skillText: text('skill_text').notNull().default(''),
    /** The lowest price of its purchasable skills (base units), null when it sells none. Written with the skills. */
    cheapestPriceBaseUnits: integer('cheapest_price_base_units'),
    /** 1 when it lists a free skill. Written with the skills. */
    sellsFree: integer('sells_free').notNull().default(0),
  },
  (table) => [
    index('agents_by_activity').on(sql`${table.lastActiveAt} desc`, table.nameKey),
    index('agents_by_update').on(table.updatedAt, table.nameKey),
    index('agents_by_owner').on(table.ownerKey),
    index('agents_by_age').on(sql`${table.createdAt} desc`, table.nameKey),
    // The price order: cheapest first, agents selling nothing paid last, ties by activity.
    index('agents_by_price').on(
      sql`${table.cheapestPriceBaseUnits} is null`,
      table.cheapestPriceBaseUnits,
      sql`${table.lastActiveAt} desc`,
      table.nameKey,
    ),
    // Liveness filters and the next instant any agent's liveness changes.
    index('agents_by_last_seen').on(table.lastSeen),
    // The few withdrawn listings, which a list's count takes off its filters' count (agentList.ts agentListCount).
    index('agents_withdrawn').on(table.nameKey).where(sql`${table.listing} = 'deleted'`),
  ],
)

/** Skills of an agent, in the order the agent listed them. Prices are integers of 10^-6 USDC. */
export const skills = sqliteTable(
  'skills',
  {
    agentKey: text('agent_key')
      .notNull()
      .references(() => agents.nameKey, { onDelete: 'cascade' }),
    position: integer('position').notNull(),
    slug: text('slug').notNull(),
    name: text('name').notNull(),
    /** The name lower-cased the way the core compares names (Unicode, unlike SQLite's lower()). */
    nameKey: text('name_key').notNull().default(''),
    description: text('description'),
    type: text('type').notNull(),
    priceBaseUnits: integer('price_base_units'),
    currency: text('currency').notNull(),
    sla: text('sla'),
    /** The promised delivery time after payment (seconds); null: none. */
    slaSeconds: integer('sla_seconds'),
    /** The buyer's review window after a delivery (seconds); 0: a delivery completes at once. */
    reviewSeconds: integer('review_seconds').notNull().default(0),
    /** When its deliveries' results are shown to buyers: 'on_delivery' or 'after_acceptance'. */
    reveal: text('reveal').notNull().default('on_delivery'),
    url: text('url'),
    /** The skill's input JSON Schema as JSON text; null: any params. */
    inputSchema: text('input_schema'),
  },
  (table) => [
    primaryKey({ columns: [table.agentKey, table.slug] }),
    index('skills_by_slug').on(table.slug),
    index('skills_by_name').on(table.nameKey),
    // What machine payments sell, paged by (agent, slug) without reading free skills.
    index('skills_paid').on(table.agentKey, table.slug).where(sql`${table.type} = 'purchasable'`),
  ],
)

/** Milestones; `seq` keeps the order they were recorded in. */
export const milestones = sqliteTable(
  'milestones',
  {
    seq: integer('seq').primaryKey({ autoIncrement: true }),
    // Not indexed: nothing reads a milestone by id, and an index on 128 random bits costs each group commit a random
    // page per milestone (a batch of 32 committed in 320 µs instead of 840 µs; bench/CHANGES.md).
    id: text('id').notNull(),
    agentKey: text('agent_key')
      .notNull()
      .references(() => agents.nameKey, { onDelete: 'cascade' }),
    date: text('date').notNull(),
    title: text('title').notNull(),
    description: text('description'),
    proof: text('proof'),
    trust: text('trust').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (table) => [
    index('milestones_by_agent_date').on(table.agentKey, sql`${table.date} desc`, sql`${table.seq} desc`),
  ],
)

/** Community users; `name_key` is the lower-cased username. `showcase` is JSON text. */
export const users = sqliteTable(
  'users',
  {
    nameKey: text('name_key').primaryKey(),
    username: text('username').notNull(),
    walletAddress: text('wallet_address').notNull(),
    bio: text('bio'),
    showcase: text('showcase').notNull(),
    inviteCode: text('invite_code').notNull().unique(),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (table) => [index('users_by_age').on(sql`${table.createdAt} desc`, table.nameKey)],
)

/** The append-only live feed; `seq` is the public event id. `data` is JSON text of public fields only. */
export const events = sqliteTable('events', {
  seq: integer('seq').primaryKey({ autoIncrement: true }),
  kind: text('kind').notNull(),
  agent: text('agent').notNull(),
  at: integer('at').notNull(),
  summary: text('summary').notNull(),
  data: text('data').notNull(),
  /** The task a task event is about (webhooks fan out by it); never shown. */
  taskId: text('task_id'),
})

/**
 * Tasks (orders). `tx_hash` is unique, and so is an escrow deposit's `(paid_from, escrow_task_id)`: a transaction, or
 * a buyer's deposit, pays one task. `(agent_key, client_key, idempotency_key)` is unique and its row keeps the first
 * answer. Amounts are 10^-6 USDC.
 */
export const tasks = sqliteTable(
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
    priceBaseUnits: integer('price_base_units').notNull(),
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
    paidAt: integer('paid_at'),
    pendingTxHash: text('pending_tx_hash'),
    recheckAttempts: integer('recheck_attempts'),
    nextRecheckAt: integer('next_recheck_at'),
    /** While a re-check runs: the end of its lease (in flight until settled or then); null otherwise. */
    recheckLeasedUntil: integer('recheck_leased_until'),
    /** The payer's EIP-712 signature sent with a not-yet-final tx hash, judged when the payment is mined. */
    pendingSignature: text('pending_signature'),
    /** A keyed digest of the client that ordered (idempotency scope, re-check budget); never the address itself. */
    clientKey: text('client_key'),
    /** When an unpaid task expires; null for tasks that never wait for payment. */
    expiresAt: integer('expires_at'),
    resultUrl: text('result_url'),
    idempotencyKey: text('idempotency_key'),
    requestFingerprint: text('request_fingerprint'),
    firstStatus: integer('first_status'),
    firstBody: text('first_body'),
    createdAt: integer('created_at').notNull(),
    completedAt: integer('completed_at'),
    /** The job (docs/jobs.md): SLA and review window when ordered (seconds), deadlines and deliveries (epoch ms). */
    slaSeconds: integer('sla_seconds'),
    reviewSeconds: integer('review_seconds').notNull().default(0),
    /** The skill's reveal when ordered: the result is shown at once, or only once completed. */
    reveal: text('reveal').notNull().default('on_delivery'),
    dueAt: integer('due_at'),
    deliveredAt: integer('delivered_at'),
    reviewUntil: integer('review_until'),
    outcome: text('outcome'),
    /** Refunds and disputes: a JSON array, only ever appended to. */
    entries: text('entries').notNull().default('[]'),
    /** What its refund records gave back (base units). */
    refundedBaseUnits: integer('refunded_base_units').notNull().default(0),
    /** Its job id on the job escrow (keccak256 of the id), and a funded job's key and terms (JSON). */
    jobId: text('job_id'),
    escrowJob: text('escrow_job'),
    /** The rating by the wallet that paid (JSON), and when it was made (epoch ms). */
    rating: text('rating'),
    ratedAt: integer('rated_at'),
  },
  (table) => [
    index('tasks_by_buyer').on(table.buyerKey, table.createdAt).where(sql`${table.buyerKey} is not null`),
    index('tasks_by_agent').on(table.agentKey, table.status, sql`${table.createdAt} desc`),
    uniqueIndex('tasks_idempotency_by_client').on(table.agentKey, table.clientKey, table.idempotencyKey),
    index('tasks_due_rechecks').on(table.nextRecheckAt),
    // The contract keys deposits by (buyer, taskId): one buyer's deposit id never blocks another buyer's.
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
export const trustBuyers = sqliteTable(
  'trust_buyers',
  {
    agentKey: text('agent_key')
      .notNull()
      .references(() => agents.nameKey, { onDelete: 'cascade' }),
    wallet: text('wallet').notNull(),
    paidBaseUnits: integer('paid_base_units').notNull(),
    /** That wallet's ratings of the agent's tasks: how many, and the sum of their scores. */
    ratingCount: integer('rating_count').notNull().default(0),
    ratingSum: integer('rating_sum').notNull().default(0),
    /** That wallet's jobs of the agent judged on time (delivered by the deadline) and late (missed). */
    onTimeJobs: integer('on_time_jobs').notNull().default(0),
    lateJobs: integer('late_jobs').notNull().default(0),
    /** 1 once the wallet paid this agent as an established buyer (Trust.ts isEstablished); it stays so. */
    established: integer('established').notNull().default(0),
    /** When this wallet was first credited to this agent (epoch ms); its earliest over agents is its age. */
    firstPaidAt: integer('first_paid_at'),
  },
  // A buyer's history over every agent it paid (Trust.ts BuyerHistory) is read by wallet.
  (table) => [
    primaryKey({ columns: [table.agentKey, table.wallet] }),
    index('trust_buyers_by_wallet').on(table.wallet),
  ],
)

/** Small JSON values by key: settings kept by the server (the generated MPP secret) and MPP replay markers. */
export const kv = sqliteTable('kv', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
})

/** Order e-mails taken, by a key of their sender and Message-ID: a message delivered twice is taken once. */
export const orderMails = sqliteTable('order_mails', {
  key: text('key').primaryKey(),
  taskId: text('task_id'),
  replyId: text('reply_id').notNull(),
  receivedAt: integer('received_at').notNull(),
})

/**
 * E-mail to send, written with the change that caused it. `next_attempt_at` is when the next attempt may start, or
 * the end of a running attempt's lease; `references` and `headers` are JSON text.
 */
export const outbox = sqliteTable(
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
    createdAt: integer('created_at').notNull(),
    attempts: integer('attempts').notNull(),
    nextAttemptAt: integer('next_attempt_at').notNull(),
    /** The end of a running attempt's lease (in flight until settled or then); null between attempts. */
    leasedUntil: integer('leased_until'),
    sentAt: integer('sent_at'),
    failedAt: integer('failed_at'),
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

/**
 * Rate-limit token buckets shared by every server process on this database: `tat` is the bucket's theoretical
 * arrival time in ms (the bucket is full when it is past); rows of full buckets are deleted now and then.
 */
export const rateBuckets = sqliteTable('rate_buckets', {
  key: text('key').primaryKey(),
  tat: real('tat').notNull(),
})

/** Webhook endpoints: a seller's (every task of `agent_key`, `task_id` null) or a buyer's (one task). */
export const webhooks = sqliteTable(
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
    createdAt: integer('created_at').notNull(),
  },
  (table) => [index('webhooks_by_owner').on(table.agentKey, table.taskId)],
)

/**
 * The webhook outbox: one row per event and endpoint (unique, so fanning an event out twice sends it once), kept
 * with its attempts until delivered or given up.
 */
export const webhookDeliveries = sqliteTable(
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
    createdAt: integer('created_at').notNull(),
    attempts: integer('attempts').notNull(),
    nextAttemptAt: integer('next_attempt_at').notNull(),
    /** The end of a running attempt's lease (in flight until settled or then); null between attempts. */
    leasedUntil: integer('leased_until'),
    deliveredAt: integer('delivered_at'),
    failedAt: integer('failed_at'),
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
