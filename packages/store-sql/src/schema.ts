import { sql } from 'drizzle-orm'
import type { PgColumn, PgTableWithColumns } from 'drizzle-orm/pg-core'
import type { SQLiteTable } from 'drizzle-orm/sqlite-core'
import type { DialectKit, postgresKit, sqliteKit } from './kit.ts'

// The tables of both SQL stores, written once: each store's schema.ts is `describeTables(itsKit)`, which drizzle-kit
// reads to write that store's migrations. A row reads the same in both stores (core rows/): times are epoch
// milliseconds, amounts base units (integers of 10^-6 USDC), flags 0/1 integers, JSON kept as text. Only what each
// dialect does its own way is a branch on `kit.dialect`: PostgreSQL's feed positions, one index expression as its
// migration wrote it, and SQLite's index of withdrawn listings. PostgreSQL's search index (pg_trgm), SQLite's FTS
// table and both change notices are in hand-written migrations: drizzle's schema holds no functions or triggers.

/** Every table but the feed, over `kit`'s column builders. */
function describe(kit: DialectKit) {
  /** Agents; `name_key` is the lower-cased name, the key names are unique under. Times are epoch milliseconds. */
  const agents = kit.table(
    'agents',
    {
      nameKey: kit.text('name_key').primaryKey(),
      name: kit.text('name').notNull(),
      bio: kit.text('bio'),
      platform: kit.text('platform').notNull(),
      model: kit.text('model'),
      walletAddress: kit.text('wallet_address'),
      basename: kit.text('basename'),
      status: kit.text('status').notNull(),
      apiKeyHash: kit.text('api_key_hash').notNull().unique(),
      pairingCodeHash: kit.text('pairing_code_hash').notNull().unique(),
      pairingCodeUsedAt: kit.long('pairing_code_used_at'),
      pairingCodeExpiresAt: kit.long('pairing_code_expires_at'),
      ownerUsername: kit.text('owner_username'),
      ownerKey: kit.text('owner_key'),
      lastSeen: kit.long('last_seen'),
      lastActiveAt: kit.long('last_active_at').notNull(),
      createdAt: kit.long('created_at').notNull(),
      updatedAt: kit.long('updated_at').notNull(),
      revision: kit.int('revision').notNull(),
      verifiedMilestones: kit.int('verified_milestones').notNull().default(0),
      claimedMilestones: kit.int('claimed_milestones').notNull().default(0),
      completedTasks: kit.int('completed_tasks').notNull().default(0),
      /** Jobs delivered by their deadline, paid jobs not delivered by it, refunds and disputes on its tasks. */
      onTimeTasks: kit.int('on_time_tasks').notNull().default(0),
      lateTasks: kit.int('late_tasks').notNull().default(0),
      refundedTasks: kit.int('refunded_tasks').notNull().default(0),
      disputedTasks: kit.int('disputed_tasks').notNull().default(0),
      /** Ratings by paying wallets (count, score sum), the wallets that rated, and the trust's per-wallet votes. */
      ratingCount: kit.int('rating_count').notNull().default(0),
      ratingSum: kit.int('rating_sum').notNull().default(0),
      ratedBuyers: kit.int('rated_buyers').notNull().default(0),
      ratingVotes: kit.int('rating_votes').notNull().default(0),
      /** Trust: the sum of the rating wallets' vote weights (Trust.ts voteWeight), in thousandths. */
      ratingWeight: kit.int('rating_weight').notNull().default(0),
      /** Trust: on-time votes of its judged jobs' buyers and how many (Trust.ts trustTotals), in thousandths. */
      reliabilityVotes: kit.int('reliability_votes').notNull().default(0),
      reliabilityWeight: kit.int('reliability_weight').notNull().default(0),
      /** Trust: sum over distinct buyer wallets of what each paid for delivered tasks, each capped (base units). */
      trustCreditBaseUnits: kit.long('trust_credit_base_units').notNull().default(0),
      /** Trust: distinct buyer wallets whose on-chain payments paid delivered tasks. */
      payingBuyers: kit.int('paying_buyers').notNull().default(0),
      /** Trust: the part of that credit from established buyers (Trust.ts isEstablished), and how many they are. */
      establishedCreditBaseUnits: kit.long('established_credit_base_units').notNull().default(0),
      establishedBuyers: kit.int('established_buyers').notNull().default(0),
      /**
       * Trust: the paid points of those counters (Trust.ts countedPaidTrust), 0 to 70, written with them, so a list sorted
       * by trust reads one column instead of the paid curve's 70 steps. They move only when a payment is credited.
       */
      paidPoints: kit.int('paid_points').notNull().default(0),
      /** Trust: 1 when the owner claimed the agent with a wallet signature (claims before that proof count 0). */
      ownerProven: kit.int('owner_proven').notNull().default(0),
      /** Where its listing is: active, deprecated (with listing_message), deleted (a tombstone sync returns). */
      listing: kit.text('listing').notNull().default('active'),
      listingMessage: kit.text('listing_message'),
      /**
       * Search: the skills' names, slugs and descriptions joined by U+001F, which q cannot hold, so a match never spans
       * two; indexed with name and bio, lower-cased, by agent_search (migration 0018). Written with the skills.
       */
      skillText: kit.text('skill_text').notNull().default(''),
      /** The lowest price of its purchasable skills (base units), null when it sells none. Written with the skills. */
      cheapestPriceBaseUnits: kit.long('cheapest_price_base_units'),
      /** 1 when it lists a free skill. Written with the skills. */
      sellsFree: kit.int('sells_free').notNull().default(0),
    },
    (table) => [
      kit.index('agents_by_activity').on(sql`${table.lastActiveAt} desc`, table.nameKey),
      kit.index('agents_by_update').on(table.updatedAt, table.nameKey),
      kit.index('agents_by_owner').on(table.ownerKey),
      kit.index('agents_by_age').on(sql`${table.createdAt} desc`, table.nameKey),
      // The price order: cheapest first, agents selling nothing paid last, ties by activity.
      kit.index('agents_by_price').on(
        // PostgreSQL's migrations wrote the expression in parentheses: kept as written, so drizzle-kit sees no change.
        kit.dialect === 'postgresql'
          ? sql`(${table.cheapestPriceBaseUnits} is null)`
          : sql`${table.cheapestPriceBaseUnits} is null`,
        table.cheapestPriceBaseUnits,
        sql`${table.lastActiveAt} desc`,
        table.nameKey,
      ),
      // Liveness filters and the next instant any agent's liveness changes.
      kit.index('agents_by_last_seen').on(table.lastSeen),
      // The few withdrawn listings, which a libSQL list's count takes off its filters' count (agentList.ts
      // agentListCount); PostgreSQL counts a list's rows by its filters alone.
      ...(kit.dialect === 'sqlite'
        ? [kit.index('agents_withdrawn').on(table.nameKey).where(sql`${table.listing} = 'deleted'`)]
        : []),
    ],
  )

  /** Skills of an agent, in the order the agent listed them. Prices are integers of 10^-6 USDC. */
  const skills = kit.table(
    'skills',
    {
      agentKey: kit
        .text('agent_key')
        .notNull()
        .references(() => agents.nameKey, { onDelete: 'cascade' }),
      position: kit.int('position').notNull(),
      slug: kit.text('slug').notNull(),
      name: kit.text('name').notNull(),
      /** The name lower-cased the way the core compares names (Unicode, unlike SQLite's lower()). */
      nameKey: kit.text('name_key').notNull().default(''),
      description: kit.text('description'),
      type: kit.text('type').notNull(),
      priceBaseUnits: kit.long('price_base_units'),
      currency: kit.text('currency').notNull(),
      sla: kit.text('sla'),
      /** The promised delivery time after payment (seconds); null: none. */
      slaSeconds: kit.int('sla_seconds'),
      /** The buyer's review window after a delivery (seconds); 0: a delivery completes at once. */
      reviewSeconds: kit.int('review_seconds').notNull().default(0),
      /** When its deliveries' results are shown to buyers: 'on_delivery' or 'after_acceptance'. */
      reveal: kit.text('reveal').notNull().default('on_delivery'),
      url: kit.text('url'),
      /** The skill's input JSON Schema as JSON text; null: any params. */
      inputSchema: kit.text('input_schema'),
    },
    (table) => [
      kit.primaryKey({ columns: [table.agentKey, table.slug] }),
      kit.index('skills_by_slug').on(table.slug),
      kit.index('skills_by_name').on(table.nameKey),
      // What machine payments sell, paged by (agent, slug) without reading free skills.
      kit.index('skills_paid').on(table.agentKey, table.slug).where(sql`${table.type} = 'purchasable'`),
    ],
  )

  /** Milestones; `seq` keeps the order they were recorded in. */
  const milestones = kit.table(
    'milestones',
    {
      seq: kit.seq('seq'),
      // Not indexed: nothing reads a milestone by id, and an index on 128 random bits costs each group commit a random
      // page per milestone (a batch of 32 committed in 320 µs instead of 840 µs; bench/CHANGES.md).
      id: kit.text('id').notNull(),
      agentKey: kit
        .text('agent_key')
        .notNull()
        .references(() => agents.nameKey, { onDelete: 'cascade' }),
      date: kit.text('date').notNull(),
      title: kit.text('title').notNull(),
      description: kit.text('description'),
      proof: kit.text('proof'),
      trust: kit.text('trust').notNull(),
      createdAt: kit.long('created_at').notNull(),
    },
    (table) => [
      kit
        .index('milestones_by_agent_date')
        .on(table.agentKey, sql`${table.date} desc`, sql`${table.seq} desc`),
    ],
  )

  /** Community users; `name_key` is the lower-cased username. `showcase` is JSON text. */
  const users = kit.table(
    'users',
    {
      nameKey: kit.text('name_key').primaryKey(),
      username: kit.text('username').notNull(),
      walletAddress: kit.text('wallet_address').notNull(),
      bio: kit.text('bio'),
      showcase: kit.text('showcase').notNull(),
      inviteCode: kit.text('invite_code').notNull().unique(),
      createdAt: kit.long('created_at').notNull(),
      updatedAt: kit.long('updated_at').notNull(),
    },
    (table) => [kit.index('users_by_age').on(sql`${table.createdAt} desc`, table.nameKey)],
  )

  /**
   * Tasks (orders). `tx_hash` is unique, and so is an escrow deposit's `(paid_from, escrow_task_id)`: a transaction, or
   * a buyer's deposit, pays one task. `(agent_key, client_key, idempotency_key)` is unique and its row keeps the first
   * answer. Amounts are 10^-6 USDC.
   */
  const tasks = kit.table(
    'tasks',
    {
      id: kit.text('id').primaryKey(),
      agentKey: kit
        .text('agent_key')
        .notNull()
        .references(() => agents.nameKey, { onDelete: 'cascade' }),
      skillName: kit.text('skill_name').notNull(),
      skillSlug: kit.text('skill_slug').notNull(),
      sla: kit.text('sla').notNull(),
      status: kit.text('status').notNull(),
      priceBaseUnits: kit.long('price_base_units').notNull(),
      payTo: kit.text('pay_to'),
      params: kit.text('params'),
      buyer: kit.text('buyer'),
      /** The buyer's name key: its budget's day is summed over these (Budget.ts). */
      buyerKey: kit.text('buyer_key'),
      buyerEmail: kit.text('buyer_email'),
      buyerWallet: kit.text('buyer_wallet'),
      paymentMethod: kit.text('payment_method'),
      txHash: kit.text('tx_hash').unique(),
      escrowTaskId: kit.text('escrow_task_id'),
      paidAmountBaseUnits: kit.text('paid_amount_base_units'),
      paidFrom: kit.text('paid_from'),
      paidAt: kit.long('paid_at'),
      pendingTxHash: kit.text('pending_tx_hash'),
      recheckAttempts: kit.int('recheck_attempts'),
      nextRecheckAt: kit.long('next_recheck_at'),
      /** While a re-check runs: the end of its lease (in flight until settled or then); null otherwise. */
      recheckLeasedUntil: kit.long('recheck_leased_until'),
      /** The payer's EIP-712 signature sent with a not-yet-final tx hash, judged when the payment is mined. */
      pendingSignature: kit.text('pending_signature'),
      /** A keyed digest of the client that ordered (idempotency scope, re-check budget); never the address itself. */
      clientKey: kit.text('client_key'),
      /** When an unpaid task expires; null for tasks that never wait for payment. */
      expiresAt: kit.long('expires_at'),
      resultUrl: kit.text('result_url'),
      idempotencyKey: kit.text('idempotency_key'),
      requestFingerprint: kit.text('request_fingerprint'),
      firstStatus: kit.int('first_status'),
      firstBody: kit.text('first_body'),
      createdAt: kit.long('created_at').notNull(),
      completedAt: kit.long('completed_at'),
      /** The job (docs/jobs.md): SLA and review window when ordered (seconds), deadlines and deliveries (epoch ms). */
      slaSeconds: kit.int('sla_seconds'),
      reviewSeconds: kit.int('review_seconds').notNull().default(0),
      /** The skill's reveal when ordered: the result is shown at once, or only once completed. */
      reveal: kit.text('reveal').notNull().default('on_delivery'),
      dueAt: kit.long('due_at'),
      deliveredAt: kit.long('delivered_at'),
      reviewUntil: kit.long('review_until'),
      outcome: kit.text('outcome'),
      /** Refunds and disputes: a JSON array, only ever appended to. */
      entries: kit.text('entries').notNull().default('[]'),
      /** What its refund records gave back (base units). */
      refundedBaseUnits: kit.long('refunded_base_units').notNull().default(0),
      /** Its job id on the job escrow (keccak256 of the id), and a funded job's key and terms (JSON). */
      jobId: kit.text('job_id'),
      escrowJob: kit.text('escrow_job'),
      /** The rating by the wallet that paid (JSON), and when it was made (epoch ms). */
      rating: kit.text('rating'),
      ratedAt: kit.long('rated_at'),
    },
    (table) => [
      kit
        .index('tasks_by_buyer')
        .on(table.buyerKey, table.createdAt)
        .where(sql`${table.buyerKey} is not null`),
      kit.index('tasks_by_agent').on(table.agentKey, table.status, sql`${table.createdAt} desc`),
      kit
        .uniqueIndex('tasks_idempotency_by_client')
        .on(table.agentKey, table.clientKey, table.idempotencyKey),
      kit.index('tasks_due_rechecks').on(table.nextRecheckAt),
      // The contract keys deposits by (buyer, taskId): one buyer's deposit id never blocks another buyer's.
      kit.uniqueIndex('tasks_escrow_deposit').on(table.paidFrom, table.escrowTaskId),
      kit.index('tasks_expiring').on(table.status, table.expiresAt),
      // The job sweep: paid tasks past their deadline, deliveries past their review window.
      kit.index('tasks_due').on(table.status, table.dueAt).where(sql`${table.dueAt} is not null`),
      kit.uniqueIndex('tasks_by_job_id').on(table.jobId).where(sql`${table.jobId} is not null`),
      // The job escrow's events name a job by its key, kept as the payment's escrow task id.
      kit.index('tasks_by_escrow_key').on(table.escrowTaskId).where(sql`${table.escrowJob} is not null`),
      kit.index('tasks_ratings').on(table.agentKey, table.ratedAt).where(sql`${table.ratedAt} is not null`),
      kit
        .index('tasks_in_review')
        .on(table.status, table.reviewUntil)
        .where(sql`${table.reviewUntil} is not null`),
      // A buyer wallet's decisions across the market (Store.buyerDecisions): only decided deliveries are indexed.
      kit
        .index('tasks_by_deciding_wallet')
        .on(sql`lower(coalesce(${table.paidFrom}, ${table.buyerWallet}))`)
        .where(sql`${table.outcome} in ('accepted', 'rejected')`),
      kit.index('tasks_checks_by_client').on(table.clientKey).where(sql`${table.pendingTxHash} is not null`),
      kit
        .index('tasks_rechecks_in_flight')
        .on(table.recheckLeasedUntil)
        .where(sql`${table.recheckLeasedUntil} is not null and ${table.status} = 'pending_payment'`),
    ],
  )

  /** Trust: what each buyer wallet paid an agent for delivered tasks (base units), to credit distinct buyers. */
  const trustBuyers = kit.table(
    'trust_buyers',
    {
      agentKey: kit
        .text('agent_key')
        .notNull()
        .references(() => agents.nameKey, { onDelete: 'cascade' }),
      wallet: kit.text('wallet').notNull(),
      paidBaseUnits: kit.long('paid_base_units').notNull(),
      /** That wallet's ratings of the agent's tasks: how many, and the sum of their scores. */
      ratingCount: kit.int('rating_count').notNull().default(0),
      ratingSum: kit.int('rating_sum').notNull().default(0),
      /** That wallet's jobs of the agent judged on time (delivered by the deadline) and late (missed). */
      onTimeJobs: kit.int('on_time_jobs').notNull().default(0),
      lateJobs: kit.int('late_jobs').notNull().default(0),
      /** 1 once the wallet paid this agent as an established buyer (Trust.ts isEstablished); it stays so. */
      established: kit.int('established').notNull().default(0),
      /** When this wallet was first credited to this agent (epoch ms); its earliest over agents is its age. */
      firstPaidAt: kit.long('first_paid_at'),
    },
    // A buyer's history over every agent it paid (Trust.ts BuyerHistory) is read by wallet.
    (table) => [
      kit.primaryKey({ columns: [table.agentKey, table.wallet] }),
      kit.index('trust_buyers_by_wallet').on(table.wallet),
    ],
  )

  /**
   * Small JSON values by key: settings kept by the server (the generated MPP secret), MPP replay markers, Idempotency-Key
   * entries and their quota rows. `expires_at` (epoch ms, null for never) is when a sweep may remove the row.
   */
  const kv = kit.table(
    'kv',
    {
      key: kit.text('key').primaryKey(),
      value: kit.text('value').notNull(),
      expiresAt: kit.long('expires_at'),
    },
    // The sweep deletes the rows whose time has passed, oldest first.
    (table) => [kit.index('kv_by_expiry').on(table.expiresAt)],
  )

  /** Order e-mails taken, by a key of their sender and Message-ID: a message delivered twice is taken once. */
  const orderMails = kit.table('order_mails', {
    key: kit.text('key').primaryKey(),
    taskId: kit.text('task_id'),
    replyId: kit.text('reply_id').notNull(),
    receivedAt: kit.long('received_at').notNull(),
  })

  /**
   * E-mail to send, written with the change that caused it. `next_attempt_at` is when the next attempt may start, or
   * the end of a running attempt's lease; `references` and `headers` are JSON text.
   */
  const outbox = kit.table(
    'outbox',
    {
      id: kit.text('id').primaryKey(),
      fromAddress: kit.text('from_address').notNull(),
      toAddress: kit.text('to_address').notNull(),
      /** The fair claim's tenant (the recipient) and endpoint (its domain): core OrderMail.ts mailQueueKeys. */
      tenant: kit.text('tenant').notNull().default(''),
      endpoint: kit.text('endpoint').notNull().default(''),
      subject: kit.text('subject').notNull(),
      body: kit.text('body').notNull(),
      messageId: kit.text('message_id').notNull(),
      inReplyTo: kit.text('in_reply_to'),
      references: kit.text('references').notNull(),
      headers: kit.text('headers').notNull(),
      createdAt: kit.long('created_at').notNull(),
      attempts: kit.int('attempts').notNull(),
      nextAttemptAt: kit.long('next_attempt_at').notNull(),
      /** The end of a running attempt's lease (in flight until settled or then); null between attempts. */
      leasedUntil: kit.long('leased_until'),
      sentAt: kit.long('sent_at'),
      failedAt: kit.long('failed_at'),
      lastError: kit.text('last_error'),
    },
    (table) => [
      kit
        .index('outbox_due')
        .on(table.nextAttemptAt)
        .where(sql`${table.sentAt} is null and ${table.failedAt} is null`),
      // The fair claim walks the endpoints with pending mail and reads each one's first due entries.
      kit
        .index('outbox_pending_by_endpoint')
        .on(table.endpoint, table.nextAttemptAt, table.id)
        .where(sql`${table.sentAt} is null and ${table.failedAt} is null`),
      kit
        .index('outbox_in_flight')
        .on(table.leasedUntil)
        .where(
          sql`${table.leasedUntil} is not null and ${table.sentAt} is null and ${table.failedAt} is null`,
        ),
    ],
  )

  /**
   * Rate-limit token buckets shared by every server process on this database: `tat` is the bucket's theoretical
   * arrival time in ms (the bucket is full when it is past); rows of full buckets are deleted now and then.
   */
  const rateBuckets = kit.table('rate_buckets', {
    key: kit.text('key').primaryKey(),
    tat: kit.real('tat').notNull(),
  })

  /** Webhook endpoints: a seller's (every task of `agent_key`, `task_id` null) or a buyer's (one task). */
  const webhooks = kit.table(
    'webhooks',
    {
      id: kit.text('id').primaryKey(),
      agentKey: kit.text('agent_key').notNull(),
      taskId: kit.text('task_id'),
      /** The feed's newest event id when it was added: it gets only later events. */
      afterEventId: kit.text('after_event_id').notNull().default('0'),
      /** Deliveries not queued because the endpoint's backlog was full (core WEBHOOK_BACKLOG_MAX). */
      droppedDeliveries: kit.int('dropped_deliveries').notNull().default(0),
      /** For a task's endpoint, the client that added it (core clientKeyOf; '' when unknown): its fair-share tenant. */
      addedBy: kit.text('added_by').notNull().default(''),
      url: kit.text('url').notNull(),
      /** The event types asked for (JSON array). */
      events: kit.text('events').notNull(),
      createdAt: kit.long('created_at').notNull(),
    },
    (table) => [kit.index('webhooks_by_owner').on(table.agentKey, table.taskId)],
  )

  /**
   * The webhook outbox: one row per event and endpoint (unique, so fanning an event out twice sends it once), kept
   * with its attempts until delivered or given up.
   */
  const webhookDeliveries = kit.table(
    'webhook_deliveries',
    {
      id: kit.text('id').primaryKey(),
      webhookId: kit
        .text('webhook_id')
        .notNull()
        .references(() => webhooks.id, { onDelete: 'cascade' }),
      /** Whose delivery it is, for the fair claim (core FairQueue.ts): the seller, or a task endpoint's buyer. */
      tenant: kit.text('tenant').notNull().default(''),
      eventId: kit.text('event_id').notNull(),
      /** Where it goes (the endpoint's URL when it was queued). */
      url: kit.text('url').notNull(),
      type: kit.text('type').notNull(),
      payload: kit.text('payload').notNull(),
      createdAt: kit.long('created_at').notNull(),
      attempts: kit.int('attempts').notNull(),
      nextAttemptAt: kit.long('next_attempt_at').notNull(),
      /** The end of a running attempt's lease (in flight until settled or then); null between attempts. */
      leasedUntil: kit.long('leased_until'),
      deliveredAt: kit.long('delivered_at'),
      failedAt: kit.long('failed_at'),
      lastStatus: kit.int('last_status'),
      lastError: kit.text('last_error'),
      lastLatencyMs: kit.int('last_latency_ms'),
    },
    (table) => [
      kit.uniqueIndex('webhook_deliveries_once').on(table.webhookId, table.eventId),
      kit
        .index('webhook_deliveries_due')
        .on(table.nextAttemptAt)
        .where(sql`${table.deliveredAt} is null and ${table.failedAt} is null`),
      kit.index('webhook_deliveries_latest').on(table.webhookId, table.createdAt),
      // The fair claim walks the endpoints with pending deliveries and reads each one's first due (and the backlog cap
      // counts an endpoint's pending ones) without reading the rest of the backlog.
      kit
        .index('webhook_deliveries_pending_by_endpoint')
        .on(table.webhookId, table.nextAttemptAt, table.id)
        .where(sql`${table.deliveredAt} is null and ${table.failedAt} is null`),
      kit
        .index('webhook_deliveries_in_flight')
        .on(table.leasedUntil)
        .where(
          sql`${table.leasedUntil} is not null and ${table.deliveredAt} is null and ${table.failedAt} is null`,
        ),
    ],
  )

  return {
    agents,
    skills,
    milestones,
    users,
    tasks,
    trustBuyers,
    kv,
    orderMails,
    outbox,
    rateBuckets,
    webhooks,
    webhookDeliveries,
  }
}

/** The feed's columns in both dialects. */
const feedColumns = (kit: DialectKit) => ({
  seq: kit.seq('seq'),
  kind: kit.text('kind').notNull(),
  agent: kit.text('agent').notNull(),
  at: kit.long('at').notNull(),
  summary: kit.text('summary').notNull(),
  data: kit.text('data').notNull(),
  /** The task a task event is about (webhooks fan out by it); never shown. */
  taskId: kit.text('task_id'),
})

/** The append-only live feed; in SQLite `seq` is the public event id. `data` is JSON text of public fields only. */
const feed = (kit: DialectKit) => kit.table('events', feedColumns(kit))

/**
 * PostgreSQL's feed. Unlike SQLite, PostgreSQL commits concurrent transactions out of the order their sequence numbers
 * were drawn in, so `seq` is not the public id: `position` is, given after commit in commit order by the feed sequencer
 * (store-postgres feedSequencer.ts), and null until then. `xid` (the writing transaction) is no longer read; it stays
 * while nodes of an older version may share the database, whose sequencer still reads it.
 */
const positionedFeed = (kit: DialectKit) =>
  kit.table(
    'events',
    {
      ...feedColumns(kit),
      xid: kit.long('xid').notNull().default(sql`(pg_current_xact_id()::text)::bigint`),
      position: kit.long('position').unique(),
    },
    (table) => [kit.index('events_unpositioned').on(table.seq).where(sql`${table.position} is null`)],
  )

/** The tables as store-libsql's drizzle queries type them. */
export type SqliteTables = ReturnType<typeof describe> & { events: ReturnType<typeof feed> }

/** A column of the canonical (SQLite) description as a PostgreSQL column: the same name, JS type and constraints. */
type AsPgColumn<Col> = Col extends { _: infer Config }
  ? PgColumn<
      {
        [Key in Exclude<keyof Config, 'dialect' | 'brand'>]: Config[Key]
      } & PgColumn['_']
    >
  : never

/** A table of the canonical description as a PostgreSQL table with the same columns. */
type AsPg<Table> =
  Table extends SQLiteTable<infer Config>
    ? PgTableWithColumns<{
        name: Config['name']
        schema: undefined
        dialect: 'pg'
        columns: { [Key in keyof Config['columns']]: AsPgColumn<Config['columns'][Key]> }
      }>
    : never

/** The tables as store-postgres's drizzle queries type them. */
export type PostgresTables = {
  [Name in keyof ReturnType<typeof describe>]: AsPg<ReturnType<typeof describe>[Name]>
} & {
  events: AsPg<ReturnType<typeof positionedFeed>>
}

/**
 * The stores' tables over SQLite's builders (kit.ts).
 * @example export const { agents, skills } = describeTables(sqliteKit)
 */
export function describeTables(kit: typeof sqliteKit): SqliteTables
/** The stores' tables over PostgreSQL's builders, with the feed's positions. */
export function describeTables(kit: typeof postgresKit): PostgresTables
/** The stores' tables over a dialect's builders. */
export function describeTables(kit: typeof sqliteKit | typeof postgresKit): SqliteTables | PostgresTables {
  // The one cast between the dialects: the description is typed with SQLite's builders, and PostgreSQL's builders
  // take the same calls (name, notNull, default, primaryKey, unique, references, index ... on ... where), so the
  // same code builds PostgreSQL tables at run time, typed by PostgresTables (the same columns as PostgreSQL columns).
  const canonical = kit as unknown as DialectKit
  if (kit.dialect === 'sqlite') return { ...describe(canonical), events: feed(canonical) }
  return { ...describe(canonical), events: positionedFeed(canonical) } as unknown as PostgresTables
}
