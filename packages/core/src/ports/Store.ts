import type { Hex } from 'viem'
import type { AgentPatch, AgentRecord } from '../Agent.ts'
import type { AgentFilters, AgentOrder } from '../AgentSearch.ts'
import type { BudgetUsage, SpendCap } from '../Budget.ts'
import type { FairShare } from '../FairQueue.ts'
import type { FeedEventInput, FeedEventRecord } from '../Feed.ts'
import type { TaskEntry, TaskOutcome, TaskRating } from '../Job.ts'
import type { MilestoneRecord } from '../Milestone.ts'
import type { MailOutcome, OutboxEntry } from '../OrderMail.ts'
import type { SkillRecord } from '../Skill.ts'
import type { IdempotentAnswer, PendingCheck, TaskPayment, TaskRecord, TaskStatus } from '../Task.ts'
import type { UserRecord } from '../User.ts'
import type { WebhookDelivery, WebhookOutcome, WebhookRecord } from '../Webhook.ts'
import type { KvStore } from './KvStore.ts'

export type { KvChange, KvStore } from './KvStore.ts'

/** A page of a list filtered by a literal, case-insensitive substring `q`. */
export type ListQuery = { q?: string; limit: number; offset: number }
/**
 * Query of the agent list: the filters of `AgentFilters` (`q` matching name, bio, or a skill's name, slug or
 * description), one page in the order asked (`compareAgents` states each order and its tie-breaks).
 */
export type AgentListQuery = AgentFilters & AgentOrder & { limit: number; offset: number }
/** Query of the user list: `q` matches username or bio. */
export type UserListQuery = ListQuery
/** Query of the feed: newest first; `after`/`before` are event ids. */
export type FeedListQuery = { limit: number; after?: string; before?: string }

/** A pairing to apply atomically: spend the code, create the user if new, bind the agent. */
export type AgentClaim = {
  pairingCodeHash: string
  /** Used only when no user has this username yet. */
  newUser: UserRecord
  at: Date
  /** Appended only if the claim succeeds. */
  event: FeedEventInput
}

/** The outcome of a claim. */
export type ClaimResult =
  | { outcome: 'claimed'; agentName: string }
  | { outcome: 'unknown_code' | 'code_used' | 'wallet_mismatch' }

/** An `agent.online` event to append only if the agent was not live (last seen before `notSeenSince`). */
export type OnlineEvent = { event: FeedEventInput; notSeenSince: Date }

/** The outcome of inserting a task. `replay`: the same client already has a task of this agent under that key. */
export type InsertTaskResult =
  | { outcome: 'inserted' }
  | { outcome: 'replay'; answer: IdempotentAnswer }
  | { outcome: 'tx_already_used' | 'escrow_task_id_used' }
  /** The order would take its buyer past the day's budget (SpendCap); `usage` is the day's spending without it. */
  | { outcome: 'budget_exceeded'; usage: BudgetUsage }

/** The outcome of marking a task paid. */
export type MarkPaidResult = 'paid' | 'not_pending' | 'tx_already_used' | 'escrow_task_id_used'

/**
 * A page of one agent's tasks. `history`: newest first. `delivered`: most recently completed first (then newest
 * first). `work_queue`: paid (oldest first, the next job on top), then pending payment, then completed (newest first).
 */
export type TaskListQuery = {
  statuses: TaskStatus[]
  order: 'history' | 'delivered' | 'work_queue'
  limit: number
  offset: number
}

/** What a job change counts on its seller (AgentRecord's `jobs`), each once. */
export type JobCounts = {
  /** A completion: `completedTasks` + 1 and the trust credit of the task's buyer wallet (see changeTask). */
  completed?: true
  onTime?: true
  late?: true
  refund?: true
  dispute?: true
}

/**
 * One step of a job (delivery, acceptance, rejection, lateness, a refund), applied as a compare-and-set: the task must
 * be in one of `from`; then it takes `to` and the fields given (absent ones unchanged), appends `entries`, counts
 * `counts` on its seller and appends `events`, all in one transaction, or nothing happens.
 */
export type TaskChange = {
  id: string
  from: readonly TaskStatus[]
  to: TaskStatus
  at: Date
  /** The result to show; null clears it (a delivery on chain that commits to another result). */
  resultUrl?: string | null
  /** The delivery (the store derives the end of its review from the task's review window). */
  deliveredAt?: Date
  completedAt?: Date
  outcome?: TaskOutcome
  /** Records appended, in order. */
  entries?: TaskEntry[]
  counts?: JobCounts
  events: FeedEventInput[]
}

/** One purchasable skill on sale, as listPaidOffers gives it. */
export type PaidOfferRecord = {
  agentKey: string
  agent: string
  slug: string
  name: string
  description: string | null
  amountBaseUnits: bigint
  /** The skill's input JSON Schema; null: any params. */
  input: Record<string, unknown> | null
}

/**
 * What an order of one skill needs of its seller and that skill (getSellerSkill): the seller's name as registered, its
 * listing (absent: active) and wallet, and the skill as stored.
 */
export type SellerSkill = {
  seller: Pick<AgentRecord, 'name' | 'walletAddress' | 'listing'>
  skill: SkillRecord
}

/**
 * An order e-mail to record once: the task it made (with its events) or none, and the reply, which lands in the
 * outbox in the same transaction.
 */
export type OrderMailReceipt = {
  /** Identifies the message across deliveries (derived from its sender and Message-ID). */
  key: string
  receivedAt: Date
  task: TaskRecord | null
  events: FeedEventInput[]
  reply: OutboxEntry
  /** The task's buyer's budget day (insertTask's cap): over it, nothing is recorded and the answer is budget_exceeded. */
  cap?: SpendCap
}

/** Agents, their skills and milestones, and what the registry lists of them. */
export type AgentStore = {
  /** Inserts a new agent and its events unless the name is taken in any case. Of two racing inserts one wins. */
  insertAgent(agent: AgentRecord, events: FeedEventInput[]): Promise<'inserted' | 'name_taken'>
  /** The agent of that name, looked up without regard to case. */
  getAgent(name: string): Promise<AgentRecord | null>
  /**
   * The skill of slug `slug` of the agent of that name (looked up without regard to case) with what an order needs of
   * the agent, read together (one statement where the store can): an order reads neither the agent's other skills nor
   * the rest of its record. Null when there is no such agent or it has no skill of that slug.
   */
  getSellerSkill(name: string, slug: string): Promise<SellerSkill | null>
  /** The name of the agent whose API key hashes to `apiKeyHash`, if any. */
  findAgentNameByKeyHash(apiKeyHash: string): Promise<string | null>
  /**
   * Applies the patch (absent fields unchanged), bumps `revision`, sets `updatedAt` and `lastActiveAt`, appends events;
   * answers the agent as this write left it, read in its transaction (no other write lands between). With
   * `apiKeyHash` (the key the update was sent with), only while it is still the agent's key, in the same statement: a
   * key rotated by another process stops it. Null: no such agent, or its key is another; nothing lands then.
   */
  updateAgent(
    name: string,
    patch: AgentPatch,
    at: Date,
    events: FeedEventInput[],
    apiKeyHash?: string,
  ): Promise<AgentRecord | null>
  /**
   * Records a heartbeat (`lastSeen` and `lastActiveAt` = `at`), appending `online` if it applies. With `apiKeyHash`
   * (the key the heartbeat was sent with), only while it is still the agent's key, in the same statement: a key rotated
   * by another process stops at once. False: no such agent, or its key is another.
   */
  recordHeartbeat(name: string, at: Date, online: OnlineEvent, apiKeyHash?: string): Promise<boolean>
  /**
   * Replaces the agent's API key hash by `toHash` if it is still `fromHash` (compare-and-set): of racing rotations
   * from one key exactly one succeeds. False when no such agent or its key hash is no longer `fromHash`.
   */
  rotateApiKey(name: string, fromHash: string, toHash: string): Promise<boolean>
  /** A page of the agents that pass every filter of `query`, in its order; with the total that pass. */
  listAgents(query: AgentListQuery): Promise<{ agents: AgentRecord[]; total: number }>
  /**
   * Sync: up to `limit` agents, withdrawn ones included, whose name key is after `after` (from the start when null)
   * and that changed at or after `since` (`updatedAt`; any when null), by name key. Ordered by a key no write changes,
   * so a pass over the pages sees each agent once, however many change meanwhile.
   */
  syncAgents(query: { after: string | null; since: Date | null; limit: number }): Promise<AgentRecord[]>
  /**
   * The first instant (epoch ms) after `now` at which any agent's liveness changes with time alone (the least
   * `livenessChangesAt` over every agent); Infinity when none can.
   */
  nextLivenessChange(now: Date): Promise<number>
  /**
   * Purchasable skills with a price of agents with a wallet and a listing not withdrawn, by (agent name key, slug), the first `limit` after
   * `after` (exclusive; null: from the start): what machine payments sell, read a page at a time.
   */
  listPaidOffers(after: { agentKey: string; slug: string } | null, limit: number): Promise<PaidOfferRecord[]>
  /** Agents owned by a user, most recently active first. */
  listAgentsOwnedBy(username: string): Promise<AgentRecord[]>
  /**
   * Inserts a milestone, counts it on its agent, marks the agent active and appends events, in one transaction. With
   * `apiKeyHash` (the key the milestone was sent with), only while it is still the agent's key, checked in the
   * counter's write: a key rotated by another process stops it. False: no such agent, or its key is another; nothing
   * lands then.
   */
  insertMilestone(milestone: MilestoneRecord, events: FeedEventInput[], apiKeyHash?: string): Promise<boolean>
  /** A page of an agent's milestones (`offset` skipped), newest `date` first, then most recently recorded first. */
  listMilestones(agentName: string, limit: number, offset?: number): Promise<MilestoneRecord[]>
  /** Agents with a listing not withdrawn selling a skill of that slug or name (any case), most recently active first. */
  findSkillSellers(nameOrSlug: string, limit: number): Promise<AgentRecord[]>
}

/** Owners: users, pairing codes and the claims that bind agents to them. */
export type UserStore = {
  /** The agent whose pairing code hashes to `pairingCodeHash`, used or not. */
  findAgentByPairingCodeHash(pairingCodeHash: string): Promise<AgentRecord | null>
  /**
   * Spends a pairing code: one of racing claims of a code wins, the others see `code_used`. The caller has checked the
   * claimer's wallet signature, so the claimed agent's `ownerProven` becomes true.
   */
  claimAgent(claim: AgentClaim): Promise<ClaimResult>
  /**
   * Gives an agent whose code is unspent a new pairing code (its digest) expiring at `expiresAt`; the old code stops
   * working. False when the agent does not exist or its code was spent (it has an owner).
   */
  setPairingCode(agentName: string, pairingCodeHash: string, expiresAt: Date): Promise<boolean>
  /** The user of that username, looked up without regard to case. */
  getUser(username: string): Promise<UserRecord | null>
  /** The user whose invite code this is. */
  findUserByInviteCode(inviteCode: string): Promise<UserRecord | null>
  /** Applies a profile patch and sets `updatedAt`. */
  updateUser(
    username: string,
    patch: Partial<Pick<UserRecord, 'bio' | 'showcase'>>,
    at: Date,
  ): Promise<UserRecord | null>
  /** Users newest first, then by username; each with the number of agents it owns. */
  listUsers(query: UserListQuery): Promise<{ users: (UserRecord & { agentCount: number })[]; total: number }>
}

/** The public event log the live feed reads (events are written with the change that causes them). */
export type FeedStore = {
  /** Feed events newest first. With `after`: the `limit` events right after that id. With `before`: right before it. */
  listEvents(query: FeedListQuery): Promise<FeedEventRecord[]>
}

/** Orders: tasks, their payments, idempotent answers, background re-checks and expiry. */
export type TaskStore = {
  /**
   * Inserts a task and its events. The task's payment tx hash and its escrow deposit (buyer and on-chain task id)
   * are claimed by unique keys, and its Idempotency-Key is unique per agent and client (`clientKey`): of racing
   * inserts that collide, one wins and the others learn why. With `cap`, in the same transaction (and, across
   * processes and nodes, one buyer's capped inserts one at a time) the buyer's spending on the cap's day plus this
   * task's price must stay within the cap (budgetUsage), else nothing is written.
   */
  insertTask(task: TaskRecord, events: FeedEventInput[], cap?: SpendCap): Promise<InsertTaskResult>
  /**
   * What the orders naming `buyerKey` as buyer and created in `[from, to)` spend: `spentBaseUnits` the price of each
   * paid one less its refunds (never below zero), `heldBaseUnits` the price of each still awaiting payment at `now`.
   */
  budgetUsage(buyerKey: string, from: Date, to: Date, now: Date): Promise<BudgetUsage>
  /** The task with this id sold by that agent (name without regard to case). */
  getTask(agentName: string, id: string): Promise<TaskRecord | null>
  /**
   * How each of `wallets` (compared without regard to case) decided deliveries across the market, as the buyer wallet
   * of their tasks (the payer, else the order's buyer_wallet): `accepted` its signed acceptances (outcome accepted, not
   * silence, which anyone naming the wallet could cause), `rejected` its rejections. Wallets with neither are left out;
   * `wallet` is lower case.
   */
  buyerDecisions(wallets: readonly string[]): Promise<BuyerDecisions[]>
  /** The id of the task a transaction hash paid, if any. */
  findTaskIdByTxHash(txHash: string): Promise<string | null>
  /**
   * The task of a job on the job escrow: by its job id (TaskRecord.jobId, before it is funded) or by its key on the
   * contract (payment.escrowTaskId of a funded job).
   */
  getTaskByEscrowJob(ref: { jobId: Hex } | { key: Hex }): Promise<TaskRecord | null>
  /** The first answer under a client's Idempotency-Key for an agent, if any. */
  findIdempotentAnswer(agentName: string, clientKey: string, key: string): Promise<IdempotentAnswer | null>
  /**
   * Compare-and-set `pending_payment` (not expired at `payment.at`, or paid by the hash its pending check keeps: a
   * payment sent in time waits for its re-check) -> `paid`, claiming the tx hash (and the escrow
   * deposit: its buyer `payment.from` and on-chain task id) in the same transaction: a hash pays one task and a task
   * is paid once, whatever races. Clears the pending check. Events land only on success.
   */
  markTaskPaid(id: string, payment: TaskPayment, events: FeedEventInput[]): Promise<MarkPaidResult>
  /**
   * Applies one step of a job (TaskChange); false when the task is not in one of its `from` states. With
   * `counts.completed` it also counts the task on its agent and credits its trust with the task's buyer wallet as
   * `creditedBuyer` (Trust.ts) picks it (the seller's and its owner's wallets being the agent's current ones): that
   * wallet's credit grows by the amount paid, capped by `cappedCredit`, and `trustCreditBaseUnits` and `payingBuyers`
   * are the sum and count over the agent's buyer wallets (wallets compared without regard to case). With
   * `counts.onTime` or `counts.late` the job counts on the row of the wallet that paid it (`payment.from`), which is
   * judged established at `at` as a credited payment is, and the agent's `reliabilityVotes` and `reliabilityWeight`
   * are summed again (Trust.ts trustTotals).
   */
  changeTask(change: TaskChange): Promise<boolean>
  /**
   * Records the rating of a finished task (completed, rejected or expired after payment) once: a compare-and-set on
   * its having none. In the same transaction the rating counts on its agent (`ratingCount`, `ratingSum`) and on the
   * rating wallet's row of its trust (`trust_buyers`: count and sum per wallet, compared without regard to case), from
   * which the agent's `ratedBuyers` and `ratingVotes` are summed again (Trust.ts ratingVote per wallet). With `counted`
   * false (Rating.ts ratingCounts: the buyer was refunded) only the task keeps the rating: no count, sum or vote moves.
   * False: the task has a rating already, is not finished, or does not exist.
   */
  rateTask(id: string, rating: TaskRating, events: FeedEventInput[], counted?: boolean): Promise<boolean>
  /** A page of an agent's rated tasks, most recently rated first, with how many it has. */
  listRatedTasks(
    agentName: string,
    limit: number,
    offset: number,
  ): Promise<{ tasks: TaskRecord[]; total: number }>
  /**
   * Up to `limit` jobs whose deadline passed at `now`: `paid` past `dueAt`, `delivered` past `reviewUntil`, soonest
   * first (the sweep then moves each with changeTask).
   */
  listDueJobs(now: Date, limit: number): Promise<TaskRecord[]>
  /** A page of an agent's tasks with the total matching `statuses`. */
  listTasks(agentName: string, query: TaskListQuery): Promise<{ tasks: TaskRecord[]; total: number }>
  /** Unpaid tasks whose pending check is due at `now`, soonest first. */
  listDueRechecks(now: Date, limit: number): Promise<TaskRecord[]>
  /**
   * Optional (the re-checks list with listDueRechecks without it): claims due checks by the fair policy of
   * FairQueue.ts under `share` (exactly the ids `pickFair` picks from the due checks, given those leased past `now`;
   * tenant and endpoint: Task.ts recheckQueueKeys), in no particular order, each leased until `leaseUntil` (its
   * check's `nextAt`, answered so; in flight until setPendingCheck or the task leaves pending_payment, or until then),
   * so that processes racing for them split them and never check one task twice; a claim not settled by then (its
   * process died) comes due again.
   */
  claimDueRechecks?(now: Date, leaseUntil: Date, share: FairShare): Promise<TaskRecord[]>
  /** Sets or clears the pending check of a task still awaiting payment (settling a claimed re-check). */
  setPendingCheck(id: string, check: PendingCheck | null): Promise<void>
  /** How many tasks awaiting payment of this client have a pending check. */
  countPendingChecks(clientKey: string): Promise<number>
  /**
   * Moves up to `limit` tasks awaiting payment whose `expiresAt` is at or before `now` to `expired`, except a task
   * whose payment is still under re-check (a pending check: it waits until the check pays it or is dropped), and deletes up to `limit` expired tasks never paid that expired at or before `purgeBefore` (a paid task,
   * and its records, is kept).
   */
  expireTasks(now: Date, purgeBefore: Date, limit: number): Promise<{ expired: number; purged: number }>
}

/** Orders by e-mail and the outbox of replies. */
export type MailStore = {
  /**
   * Records an order e-mail: its key, its task and events if any, and its reply in the outbox, all in one
   * transaction. `duplicate` (nothing written) when a message with that key was recorded before.
   */
  acceptOrderMail(receipt: OrderMailReceipt): Promise<'accepted' | 'duplicate' | 'budget_exceeded'>
  /**
   * Claims unsent, not abandoned outbox entries due at `now` by the fair policy of FairQueue.ts under `share` (exactly
   * the ids `pickFair` picks from the due entries, given those whose lease runs past `now`; tenant and endpoint:
   * OrderMail.ts mailQueueKeys of the recipient): each gets one more attempt and is leased until `leaseUntil` (in
   * flight until settled or then), so racing senders never claim the same entry twice. Oldest queued first.
   */
  claimDueMail(now: Date, leaseUntil: Date, share: FairShare): Promise<OutboxEntry[]>
  /** Records how an attempt ended: sent, to retry at a time, or abandoned. */
  settleMail(id: string, outcome: MailOutcome): Promise<void>
  /** An outbox entry by id. */
  getMail(id: string): Promise<OutboxEntry | null>
}

/** Webhook endpoints and their outbox of deliveries (docs/webhooks.md). */
export type WebhookStore = {
  /**
   * Stores an endpoint unless its owner (the agent's own endpoints, `taskId` null, or one task's) has `max` already,
   * counted in the same transaction; false when full.
   */
  insertWebhook(webhook: WebhookRecord, max: number): Promise<boolean>
  /** An owner's endpoints (the agent's own when `taskId` is null, else that task's), oldest first. */
  listWebhooks(agentKey: string, taskId: string | null): Promise<WebhookRecord[]>
  /** Deletes an owner's endpoint and its deliveries; false when the owner has none with that id. */
  deleteWebhook(id: string, agentKey: string, taskId: string | null): Promise<boolean>
  /** Where an event of task `taskId` (sold by `agentKey`) goes: the agent's own endpoints and the task's. */
  webhooksFor(agentKey: string, taskId: string): Promise<WebhookRecord[]>
  /**
   * Adds deliveries; one whose endpoint already has a delivery of its event is skipped (fanning out twice is safe),
   * and one whose endpoint already has `backlogMax` pending (neither delivered nor given up) is not queued: the
   * endpoint's `droppedDeliveries` counts it instead.
   */
  enqueueDeliveries(deliveries: WebhookDelivery[], backlogMax: number): Promise<void>
  /**
   * Claims deliveries due at `now` (neither delivered nor given up) by the fair policy of FairQueue.ts under `share`
   * (exactly the ids `pickFair` picks from the due deliveries, given those whose lease runs past `now`): each gets one
   * more attempt and is leased until `leaseUntil` (in flight until settled or then), so racing senders never send one
   * twice at once. The tenant is the delivery's `tenant`, the endpoint its `webhookId`. Oldest queued first.
   */
  claimDueDeliveries(now: Date, leaseUntil: Date, share: FairShare): Promise<WebhookDelivery[]>
  /** Records how an attempt ended: delivered, to retry at a time, or given up. */
  settleDelivery(id: string, outcome: WebhookOutcome): Promise<void>
  /** An endpoint's newest `limit` deliveries, newest first. */
  listDeliveries(webhookId: string, limit: number): Promise<WebhookDelivery[]>
}

/** A buyer wallet's decisions on deliveries across the market (Store.buyerDecisions). */
export type BuyerDecisions = { wallet: string; accepted: number; rejected: number }

/** Whether the store answers, the version its read caches are keyed by, and closing it. */
export type StoreLifecycle = {
  /**
   * Optional: a value that changes whenever what public reads show changes (agents, skills, milestones, users): at
   * once after this process's writes, within a few milliseconds after other processes' writes. The core keys its
   * read caches by it; a Store without it gets no caching.
   */
  changeVersion?(): Promise<string>
  /**
   * Optional: calls `onNew` soon after feed events written by other processes become readable (PostgreSQL's NOTIFY),
   * until the returned function is called. The feed hub then polls only as a fallback.
   */
  watchEvents?(onNew: () => void): () => void
  /** Resolves when the store can be read; rejects otherwise. */
  ping(): Promise<void>
  /** Releases connections. */
  close(): Promise<void>
}

/**
 * What the core needs from a database: every aggregate's port together. Each write that must be atomic with its
 * feed events or claims is one method, so a store implements it in one transaction.
 */
export type Store = AgentStore &
  UserStore &
  FeedStore &
  TaskStore &
  MailStore &
  WebhookStore &
  KvStore &
  StoreLifecycle
