import { type AgentRecord, nameKey } from '../Agent.ts'
import { asciiLower, compareAgents, compareByActivity, matchesFilters } from '../AgentSearch.ts'
import { passesCap, taskSpending } from '../Budget.ts'
import { claimFair } from '../FairQueue.ts'
import type { FeedEventInput, FeedEventRecord } from '../Feed.ts'
import { livenessChangesAt } from '../Liveness.ts'
import type { MilestoneRecord } from '../Milestone.ts'
import { mailQueueKeys, type OutboxEntry } from '../OrderMail.ts'
import { recheckQueueKeys } from '../PaymentRechecks.ts'
import type { KvWrite } from '../ports/KvStore.ts'
import type {
  BuyerDecisions,
  JobCounts,
  ListQuery,
  Store,
  TaskChange,
  TaskListQuery,
} from '../ports/Store.ts'
import {
  settledColumns,
  toDeliveryRecord,
  toDeliveryRow,
  type WebhookDeliveryRow,
} from '../rows/webhookRows.ts'
import {
  buyerWalletOf,
  findSkill,
  type TaskPayment,
  type TaskRecord,
  type TaskStatus,
  taskDueAt,
  taskReviewUntil,
} from '../Task.ts'
import {
  type BuyerHistory,
  cappedCredit,
  creditedBuyer,
  isEstablished,
  type TrustBuyerRow,
  trustTotals,
} from '../Trust.ts'
import { type UserRecord, usernameKey } from '../User.ts'
import type { WebhookRecord } from '../Webhook.ts'

/** Options of the memory store (none yet; the object keeps the factory signature stable). */

/** A buyer wallet's trust row in the memory store: the shared row, and when its first credit was. */
type MemoryTrustRow = TrustBuyerRow & { firstPaidAt: Date | null }
/** Options of the memory store (none yet). */
export type MemoryStoreOptions = Record<string, never>

/** True when `q` is absent or a literal, case-insensitive substring of one of `fields`. */
function matchesQuery(q: string | undefined, ...fields: (string | null)[]): boolean {
  if (!q) return true
  const needle = asciiLower(q)
  return fields.some((field) => asciiLower(field ?? '').includes(needle))
}

function byKey(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** The later of a recorded time and a new one: a late write never moves "last seen" or "last active" back. */
function later(recorded: Date | null, at: Date): Date {
  return recorded !== null && recorded > at ? recorded : at
}

const WORK_QUEUE_RANK: Record<TaskStatus, number> = {
  paid: 0,
  pending_payment: 1,
  delivered: 2,
  completed: 2,
  rejected: 2,
  expired: 2,
}

/** Tasks in the order a task list shows them (see TaskListQuery). */
export function compareTasks(order: TaskListQuery['order']) {
  return (a: TaskRecord, b: TaskRecord): number => {
    const newestFirst = b.createdAt.getTime() - a.createdAt.getTime() || byKey(b.id, a.id)
    if (order === 'history') return newestFirst
    if (order === 'delivered')
      return (b.completedAt?.getTime() ?? -1) - (a.completedAt?.getTime() ?? -1) || newestFirst
    const rank = WORK_QUEUE_RANK[a.status] - WORK_QUEUE_RANK[b.status]
    if (rank !== 0) return rank
    // The paid queue is first in, first out; the rest read newest first.
    if (a.status === 'paid')
      return (a.payment?.at.getTime() ?? 0) - (b.payment?.at.getTime() ?? 0) || byKey(b.id, a.id)
    return newestFirst
  }
}

function page<T>(items: T[], { offset, limit }: ListQuery): T[] {
  return items.slice(offset, offset + limit)
}

/**
 * An in-process Store for tests, demos and embedders without a database. Not durable.
 * @example const market = Marketplace.create({ store: memoryStore(), config: defaultConfig('http://localhost:3000') })
 */
export function memoryStore(_options: MemoryStoreOptions = {}): Store {
  const agents = new Map<string, AgentRecord>()
  const users = new Map<string, UserRecord>()
  const milestones: MilestoneRecord[] = []
  const events: FeedEventRecord[] = []
  const tasks = new Map<string, TaskRecord>()
  const kv = new Map<string, string>()
  /** The expiry (epoch ms) of each kv entry that has one (the SQL stores' kv.expires_at). */
  const kvExpiries = new Map<string, number>()
  /** The JSON value at `key`, or null. */
  const kvValue = (key: string): unknown | null => {
    const value = kv.get(key)
    return value === undefined ? null : JSON.parse(value)
  }
  /** Applies one key's write (KvWrite): keeps, sets (with its expiry) or removes the entry. */
  const writeKv = (key: string, write: KvWrite) => {
    if (write.op === 'set') {
      kv.set(key, JSON.stringify(write.value))
      expireKv(key, write.expiresAt)
    }
    if (write.op === 'delete') {
      kv.delete(key)
      kvExpiries.delete(key)
    }
  }
  /** Keeps or replaces `key`'s expiry: absent keeps it (none for a new entry), null clears it. */
  const expireKv = (key: string, expiresAt: Date | null | undefined) => {
    if (expiresAt === undefined) return
    if (expiresAt === null) kvExpiries.delete(key)
    else kvExpiries.set(key, expiresAt.getTime())
  }
  const orderMailKeys = new Set<string>()
  const outbox = new Map<string, OutboxEntry>()
  /** The end of each running re-check's lease, by task id (the SQL stores' recheck_leased_until). */
  const recheckLeases = new Map<string, number>()
  // Webhooks are kept as the SQL stores' rows, so an attempt's outcome sets the same columns (settledColumns).
  const webhooks = new Map<string, WebhookRecord>()
  const deliveries = new Map<string, WebhookDeliveryRow>()
  const ownedBy = (agentKey: string, taskId: string | null) =>
    [...webhooks.values()].filter((hook) => hook.agentKey === agentKey && hook.taskId === taskId)
  /** Per agent key, per buyer wallet (lower-cased): its trust row (credit, standing, ratings; Trust.ts trustTotals). */
  const trustRows = new Map<string, Map<string, MemoryTrustRow>>()

  const append = (inputs: FeedEventInput[]) => {
    for (const input of inputs) events.push(structuredClone({ ...input, id: String(events.length + 1) }))
  }
  const agentOf = (name: string) => agents.get(nameKey(name))
  const ownedCount = (username: string) =>
    [...agents.values()].filter(
      (agent) => agent.ownerUsername && usernameKey(agent.ownerUsername) === usernameKey(username),
    ).length

  /** The trust row of `wallet` (lower-cased) for the agent of key `agentKey`, made empty if it has none. */
  const trustRow = (agentKey: string, wallet: string) => {
    const rows = trustRows.get(agentKey) ?? new Map<string, MemoryTrustRow>()
    trustRows.set(agentKey, rows)
    const row = rows.get(wallet) ?? {
      paidBaseUnits: 0n,
      established: false,
      firstPaidAt: null,
      ratingCount: 0,
      ratingSum: 0,
      onTimeJobs: 0,
      lateJobs: 0,
    }
    rows.set(wallet, row)
    return row
  }

  /** True when `other` is `seller` or shares its owner or its wallet (payments to it are not independent history). */
  const connected = (seller: AgentRecord, other: AgentRecord) =>
    nameKey(other.name) === nameKey(seller.name) ||
    (!!seller.ownerUsername &&
      !!other.ownerUsername &&
      usernameKey(other.ownerUsername) === usernameKey(seller.ownerUsername)) ||
    (!!seller.walletAddress && other.walletAddress?.toLowerCase() === seller.walletAddress.toLowerCase())

  /** What `wallet` had paid sellers unconnected to `seller`, and when it first paid any (Trust.ts BuyerHistory). */
  const historyOf = (seller: AgentRecord, wallet: string): BuyerHistory => {
    let elsewhereBaseUnits = 0n
    let firstPaidAt: Date | null = null
    for (const [key, rows] of trustRows) {
      const row = rows.get(wallet)
      const other = agents.get(key)
      if (!row?.firstPaidAt || !other) continue
      if (!firstPaidAt || row.firstPaidAt < firstPaidAt) firstPaidAt = row.firstPaidAt
      if (!connected(seller, other)) elsewhereBaseUnits += row.paidBaseUnits
    }
    return { elsewhereBaseUnits, firstPaidAt }
  }

  /** Sums the seller's trust counters again from its rows. */
  const sumTrust = (seller: AgentRecord) =>
    Object.assign(seller, trustTotals(trustRows.get(nameKey(seller.name))?.values() ?? []))

  /**
   * Credits `seller` with the buyer of its delivered `task` at `at`, if that buyer counts (see Store.changeTask): its
   * credit grows, capped, and it becomes established when its history elsewhere says so (Trust.ts isEstablished).
   */
  const creditTrust = (seller: AgentRecord, task: TaskRecord, at: Date) => {
    const owner = seller.ownerUsername ? users.get(usernameKey(seller.ownerUsername)) : undefined
    const buyer = creditedBuyer(task, [seller.walletAddress, owner?.walletAddress ?? null])
    if (!buyer || !task.payment) return
    const wallet = buyer.toLowerCase()
    const established = isEstablished(historyOf(seller, wallet), at)
    const row = trustRow(nameKey(seller.name), wallet)
    row.paidBaseUnits = cappedCredit(row.paidBaseUnits, task.payment.amountBaseUnits)
    row.established ||= established
    row.firstPaidAt ??= at
    sumTrust(seller)
  }

  /**
   * Counts a judged job (on time or late) on the row of the wallet that paid it, with that wallet's standing at `at`
   * (Store.changeTask): the core counts only jobs another wallet than the seller's own paid on chain.
   */
  const judgeJob = (seller: AgentRecord, task: TaskRecord, counts: JobCounts, at: Date) => {
    const payer = task.payment?.from
    if (!payer || !(counts.onTime || counts.late)) return
    const wallet = payer.toLowerCase()
    const established = isEstablished(historyOf(seller, wallet), at)
    const row = trustRow(nameKey(seller.name), wallet)
    row.onTimeJobs += counts.onTime ? 1 : 0
    row.lateJobs += counts.late ? 1 : 0
    row.established ||= established
    sumTrust(seller)
  }

  /** Counts a job change on its seller (Store.changeTask). */
  const countJob = (seller: AgentRecord, task: TaskRecord, change: TaskChange) => {
    const counts = change.counts ?? {}
    judgeJob(seller, task, counts, change.at)
    if (counts.completed) {
      seller.completedTasks += 1
      seller.lastActiveAt = later(seller.lastActiveAt, change.at)
      creditTrust(seller, task, change.at)
    }
    if (counts.onTime) seller.onTimeTasks += 1
    if (counts.late) seller.lateTasks += 1
    if (counts.refund) seller.refundedTasks += 1
    if (counts.dispute) seller.disputedTasks += 1
  }

  /** Which unique claim a payment would break: its tx hash, or its buyer's escrow deposit, held by another task. */
  const claimConflict = (id: string, payment: TaskPayment | null) => {
    if (!payment) return null
    for (const other of tasks.values()) {
      if (other.id === id || !other.payment) continue
      if (payment.txHash && other.payment.txHash === payment.txHash) return 'tx_already_used' as const
      const sameDeposit =
        payment.escrowTaskId &&
        other.payment.escrowTaskId === payment.escrowTaskId &&
        other.payment.from === payment.from
      if (sameDeposit) return 'escrow_task_id_used' as const
    }
    return null
  }

  /** Unpaid tasks whose check is due at `now`, soonest first (the stored records themselves). */
  const dueRechecks = (now: Date, limit: number) =>
    [...tasks.values()]
      .filter(
        (task) => task.status === 'pending_payment' && task.pendingCheck && task.pendingCheck.nextAt <= now,
      )
      .sort((a, b) => (a.pendingCheck?.nextAt.getTime() ?? 0) - (b.pendingCheck?.nextAt.getTime() ?? 0))
      .slice(0, limit)

  /** The spending of a buyer's orders created in [from, to) at `now` (Budget.ts taskSpending each). */
  const usageOf = (buyerKey: string, from: Date, to: Date, now: Date) => {
    const usage = { spentBaseUnits: 0n, heldBaseUnits: 0n }
    for (const task of tasks.values()) {
      if (task.buyerKey !== buyerKey) continue
      if (task.createdAt < from || task.createdAt >= to) continue
      const spending = taskSpending(task, now)
      usage.spentBaseUnits += spending.spentBaseUnits
      usage.heldBaseUnits += spending.heldBaseUnits
    }
    return usage
  }
  return {
    async insertAgent(agent, newEvents) {
      const key = nameKey(agent.name)
      if (agents.has(key)) return 'name_taken'
      agents.set(key, structuredClone(agent))
      append(newEvents)
      return 'inserted'
    },
    async getAgent(name) {
      const agent = agentOf(name)
      return agent ? structuredClone(agent) : null
    },
    async getSellerSkill(name, slug) {
      const agent = agentOf(name)
      const skill = agent?.skills.find((each) => each.slug === slug)
      if (!agent || !skill) return null
      const { walletAddress, listing } = agent
      return {
        seller: { name: agent.name, walletAddress, ...(listing !== undefined && { listing }) },
        skill: structuredClone(skill),
      }
    },
    async findAgentNameByKeyHash(apiKeyHash) {
      for (const agent of agents.values()) if (agent.apiKeyHash === apiKeyHash) return agent.name
      return null
    },
    async updateAgent(name, patch, at, newEvents, apiKeyHash) {
      const agent = agentOf(name)
      if (!agent || (apiKeyHash !== undefined && agent.apiKeyHash !== apiKeyHash)) return null
      // A field present but undefined is not a change (as SQL stores read a patch).
      const changed = Object.fromEntries(Object.entries(patch).filter(([, value]) => value !== undefined))
      Object.assign(agent, structuredClone(changed), {
        revision: agent.revision + 1,
        updatedAt: later(agent.updatedAt, at),
        lastActiveAt: later(agent.lastActiveAt, at),
      })
      append(newEvents)
      return structuredClone(agent)
    },
    async recordHeartbeat(name, at, online, apiKeyHash) {
      const agent = agentOf(name)
      if (!agent || (apiKeyHash !== undefined && agent.apiKeyHash !== apiKeyHash)) return false
      if (!agent.lastSeen || agent.lastSeen < online.notSeenSince) append([online.event])
      agent.lastSeen = later(agent.lastSeen, at)
      agent.lastActiveAt = later(agent.lastActiveAt, at)
      return true
    },
    async rotateApiKey(name, fromHash, toHash) {
      const agent = agentOf(name)
      if (!agent || agent.apiKeyHash !== fromHash) return false
      agent.apiKeyHash = toHash
      return true
    },
    async listAgents(query) {
      const found = [...agents.values()]
        .filter((agent) => matchesFilters(agent, query))
        .sort(compareAgents(query))
      return { agents: structuredClone(page(found, query)), total: found.length }
    },
    async syncAgents({ after, since, limit }) {
      return structuredClone(
        [...agents.values()]
          .filter((agent) => after === null || nameKey(agent.name) > after)
          .filter((agent) => since === null || agent.updatedAt >= since)
          .sort((a, b) => byKey(nameKey(a.name), nameKey(b.name)))
          .slice(0, limit),
      )
    },
    async nextLivenessChange(now) {
      return Math.min(...[...agents.values()].map((agent) => livenessChangesAt(agent.lastSeen, now)))
    },
    async listPaidOffers(after, limit) {
      const offers = [...agents.values()]
        .filter((agent) => agent.walletAddress && agent.listing !== 'deleted')
        .flatMap((agent) =>
          agent.skills
            .filter((skill) => skill.type === 'purchasable' && (skill.priceBaseUnits ?? 0n) > 0n)
            .map((skill) => ({
              agentKey: nameKey(agent.name),
              agent: agent.name,
              slug: skill.slug,
              name: skill.name,
              description: skill.description ?? null,
              amountBaseUnits: skill.priceBaseUnits ?? 0n,
              input: skill.input,
            })),
        )
        .sort((a, b) => byKey(a.agentKey, b.agentKey) || byKey(a.slug, b.slug))
      const start = after
        ? offers.findIndex(
            (offer) =>
              byKey(offer.agentKey, after.agentKey) > 0 ||
              (offer.agentKey === after.agentKey && byKey(offer.slug, after.slug) > 0),
          )
        : 0
      return start < 0 ? [] : offers.slice(start, start + limit)
    },
    async listAgentsOwnedBy(username) {
      const key = usernameKey(username)
      const owned = [...agents.values()].filter(
        (agent) => agent.ownerUsername && usernameKey(agent.ownerUsername) === key,
      )
      return structuredClone(owned.sort(compareByActivity))
    },
    async insertMilestone(milestone, newEvents, apiKeyHash) {
      const agent = agentOf(milestone.agentName)
      if (!agent || (apiKeyHash !== undefined && agent.apiKeyHash !== apiKeyHash)) return false
      milestones.push(structuredClone(milestone))
      if (milestone.trust === 'verified') agent.verifiedMilestones += 1
      else agent.claimedMilestones += 1
      agent.lastActiveAt = later(agent.lastActiveAt, milestone.createdAt)
      append(newEvents)
      return true
    },
    async listMilestones(agentName, limit, offset = 0) {
      const key = nameKey(agentName)
      return milestones
        .map((milestone, order) => ({ milestone, order }))
        .filter(({ milestone }) => nameKey(milestone.agentName) === key)
        .sort((a, b) => byKey(b.milestone.date, a.milestone.date) || b.order - a.order)
        .slice(offset, offset + limit)
        .map(({ milestone }) => structuredClone(milestone))
    },
    async findAgentByPairingCodeHash(pairingCodeHash) {
      const agent = [...agents.values()].find((candidate) => candidate.pairingCodeHash === pairingCodeHash)
      return agent ? structuredClone(agent) : null
    },
    async claimAgent({ pairingCodeHash, newUser, at, event }) {
      const agent = [...agents.values()].find((candidate) => candidate.pairingCodeHash === pairingCodeHash)
      if (!agent) return { outcome: 'unknown_code' }
      if (agent.pairingCodeUsedAt) return { outcome: 'code_used' }
      const key = usernameKey(newUser.username)
      const existing = users.get(key)
      if (existing && existing.walletAddress !== newUser.walletAddress) return { outcome: 'wallet_mismatch' }
      const owner = existing ?? structuredClone(newUser)
      users.set(key, owner)
      agent.pairingCodeUsedAt = at
      agent.ownerUsername = owner.username
      agent.ownerProven = true
      if (at > agent.updatedAt) agent.updatedAt = at
      append([event])
      return { outcome: 'claimed', agentName: agent.name }
    },
    async setPairingCode(agentName, pairingCodeHash, expiresAt) {
      const agent = agents.get(nameKey(agentName))
      if (!agent || agent.pairingCodeUsedAt) return false
      agent.pairingCodeHash = pairingCodeHash
      agent.pairingCodeExpiresAt = new Date(expiresAt)
      return true
    },
    async getUser(username) {
      const user = users.get(usernameKey(username))
      return user ? structuredClone(user) : null
    },
    async findUserByInviteCode(inviteCode) {
      const user = [...users.values()].find((candidate) => candidate.inviteCode === inviteCode)
      return user ? structuredClone(user) : null
    },
    async updateUser(username, patch, at) {
      const user = users.get(usernameKey(username))
      if (!user) return null
      Object.assign(user, structuredClone(patch), { updatedAt: at })
      return structuredClone(user)
    },
    async listUsers(query) {
      const found = [...users.values()]
        .filter((user) => matchesQuery(query.q, user.username, user.bio))
        .sort(
          (a, b) =>
            b.createdAt.getTime() - a.createdAt.getTime() ||
            byKey(usernameKey(a.username), usernameKey(b.username)),
        )
      const rows = page(found, query).map((user) => ({
        ...structuredClone(user),
        agentCount: ownedCount(user.username),
      }))
      return { users: rows, total: found.length }
    },
    async listEvents({ limit, after, before }) {
      let selected: FeedEventRecord[]
      if (after !== undefined)
        selected = events.filter((event) => Number(event.id) > Number(after)).slice(0, limit)
      else {
        const older =
          before === undefined ? events : events.filter((event) => Number(event.id) < Number(before))
        selected = older.slice(-limit)
      }
      return structuredClone(selected).reverse()
    },
    async budgetUsage(buyerKey, from, to, now) {
      return usageOf(buyerKey, from, to, now)
    },
    async buyerDecisions(wallets) {
      const counts = new Map<string, BuyerDecisions>()
      const wanted = new Set(wallets.map((wallet) => wallet.toLowerCase()))
      for (const task of tasks.values()) {
        const wallet = buyerWalletOf(task)?.toLowerCase()
        const decision =
          task.outcome === 'accepted' ? 'accepted' : task.outcome === 'rejected' ? 'rejected' : null
        if (!wallet || !decision || !wanted.has(wallet)) continue
        const count = counts.get(wallet) ?? { wallet, accepted: 0, rejected: 0 }
        count[decision]++
        counts.set(wallet, count)
      }
      return [...counts.values()]
    },
    async insertTask(task, newEvents, cap) {
      const agentKey = nameKey(task.agentName)
      const siblings = [...tasks.values()].filter((other) => nameKey(other.agentName) === agentKey)
      const key = task.idempotency?.key
      const first = key
        ? siblings.find((other) => other.clientKey === task.clientKey && other.idempotency?.key === key)
        : undefined
      if (first?.idempotency) return { outcome: 'replay', answer: structuredClone(first.idempotency) }
      const claim = claimConflict(task.id, task.payment)
      if (claim) return { outcome: claim }
      if (cap) {
        const usage = usageOf(cap.buyerKey, cap.from, cap.to, cap.now)
        if (passesCap(usage, task.priceBaseUnits, cap)) return { outcome: 'budget_exceeded', usage }
      }
      tasks.set(task.id, structuredClone(task))
      append(newEvents)
      return { outcome: 'inserted' }
    },
    async getTask(agentName, id) {
      const task = tasks.get(id)
      return task && nameKey(task.agentName) === nameKey(agentName) ? structuredClone(task) : null
    },
    async rateTask(id, rating, newEvents, counted = true) {
      const task = tasks.get(id)
      const ratable = ['completed', 'rejected', 'expired'].includes(task?.status ?? '') && task?.payment
      if (!task || task.rating || !ratable) return false
      task.rating = structuredClone(rating)
      const seller = agentOf(task.agentName)
      if (seller && counted) {
        const row = trustRow(nameKey(seller.name), rating.wallet.toLowerCase())
        row.ratingCount += 1
        row.ratingSum += rating.score
        seller.ratingCount += 1
        seller.ratingSum += rating.score
        sumTrust(seller)
      }
      append(newEvents)
      return true
    },
    async listRatedTasks(agentName, limit, offset) {
      const rated = [...tasks.values()]
        .filter((task) => nameKey(task.agentName) === nameKey(agentName) && task.rating)
        .sort((a, b) => (b.rating?.at.getTime() ?? 0) - (a.rating?.at.getTime() ?? 0) || byKey(b.id, a.id))
      return { tasks: structuredClone(rated.slice(offset, offset + limit)), total: rated.length }
    },
    async getTaskByEscrowJob(ref) {
      const found = [...tasks.values()].find((task) =>
        'jobId' in ref
          ? task.jobId === ref.jobId
          : task.payment?.method === 'job_escrow' && task.payment.escrowTaskId === ref.key,
      )
      return found ? structuredClone(found) : null
    },
    async findTaskIdByTxHash(txHash) {
      return [...tasks.values()].find((task) => task.payment?.txHash === txHash)?.id ?? null
    },
    async findIdempotentAnswer(agentName, clientKey, key) {
      const task = [...tasks.values()].find(
        (other) =>
          nameKey(other.agentName) === nameKey(agentName) &&
          other.clientKey === clientKey &&
          other.idempotency?.key === key,
      )
      return task?.idempotency ? structuredClone(task.idempotency) : null
    },
    async markTaskPaid(id, payment, newEvents) {
      const task = tasks.get(id)
      if (task?.status !== 'pending_payment') return 'not_pending'
      const awaited = payment.txHash !== null && task.pendingCheck?.txHash === payment.txHash
      if (task.expiresAt && task.expiresAt <= payment.at && !awaited) return 'not_pending'
      const claim = claimConflict(id, payment)
      if (claim) return claim
      Object.assign(task, { status: 'paid', payment: structuredClone(payment), pendingCheck: null })
      append(newEvents)
      return 'paid'
    },
    async changeTask(change) {
      const task = tasks.get(change.id)
      if (!task || !change.from.includes(task.status)) return false
      const { resultUrl, deliveredAt, completedAt, outcome, entries = [] } = change
      Object.assign(task, {
        status: change.to,
        ...(resultUrl !== undefined && { resultUrl }),
        ...(deliveredAt !== undefined && { deliveredAt }),
        ...(completedAt !== undefined && { completedAt }),
        ...(outcome !== undefined && { outcome }),
      })
      task.entries.push(...structuredClone(entries))
      const seller = agentOf(task.agentName)
      if (seller) countJob(seller, task, change)
      append(change.events)
      return true
    },
    async listDueJobs(now, limit) {
      // A job in escrow moves by the chain's events only.
      const deadline = (task: TaskRecord) =>
        task.payment?.job
          ? null
          : task.status === 'paid'
            ? taskDueAt(task)
            : task.status === 'delivered'
              ? taskReviewUntil(task)
              : null
      return structuredClone(
        [...tasks.values()]
          .flatMap((task) => {
            const at = deadline(task)
            return at && at <= now ? [{ task, at }] : []
          })
          .sort((a, b) => a.at.getTime() - b.at.getTime())
          .slice(0, limit)
          .map(({ task }) => task),
      )
    },
    async listTasks(agentName, query) {
      const found = [...tasks.values()]
        .filter(
          (task) => nameKey(task.agentName) === nameKey(agentName) && query.statuses.includes(task.status),
        )
        .sort(compareTasks(query.order))
      return { tasks: structuredClone(page(found, query)), total: found.length }
    },
    async listDueRechecks(now, limit) {
      return structuredClone(dueRechecks(now, limit))
    },
    async claimDueRechecks(now, leaseUntil, share) {
      const pending = [...tasks.values()].flatMap((task) =>
        task.status === 'pending_payment' && task.pendingCheck
          ? [
              {
                id: task.id,
                ...recheckQueueKeys(task),
                dueAt: task.pendingCheck.nextAt.getTime(),
                leasedUntil: recheckLeases.get(task.id) ?? null,
              },
            ]
          : [],
      )
      // A lease of a task no longer awaiting payment (paid, expired, purged) is settled: forget it.
      for (const id of recheckLeases.keys())
        if (tasks.get(id)?.status !== 'pending_payment') recheckLeases.delete(id)
      const claimed = claimFair(pending, now.getTime(), share).flatMap((id) => tasks.get(id) ?? [])
      for (const task of claimed) {
        if (task.pendingCheck) task.pendingCheck.nextAt = new Date(leaseUntil)
        recheckLeases.set(task.id, leaseUntil.getTime())
      }
      return structuredClone(claimed)
    },
    async setPendingCheck(id, check) {
      const task = tasks.get(id)
      if (task?.status !== 'pending_payment') return
      task.pendingCheck = structuredClone(check)
      recheckLeases.delete(id)
    },
    async countPendingChecks(clientKey) {
      let count = 0
      for (const task of tasks.values())
        if (task.clientKey === clientKey && task.status === 'pending_payment' && task.pendingCheck) count++
      return count
    },
    async expireTasks(now, purgeBefore, limit) {
      let expired = 0
      let purged = 0
      for (const task of tasks.values()) {
        if (expired >= limit) break
        if (task.status !== 'pending_payment' || !task.expiresAt || task.expiresAt > now) continue
        // A payment sent in time and still under re-check holds its task until the re-check decides.
        if (task.pendingCheck) continue
        Object.assign(task, { status: 'expired', pendingCheck: null })
        expired++
      }
      // Like the SQL stores, the purge follows the expiry in the same call; a paid task is never purged.
      for (const task of [...tasks.values()]) {
        if (purged >= limit) break
        if (task.status !== 'expired' || task.payment || !task.expiresAt || task.expiresAt > purgeBefore)
          continue
        tasks.delete(task.id)
        purged++
      }
      return { expired, purged }
    },
    async findSkillSellers(nameOrSlug, limit) {
      return structuredClone(
        [...agents.values()]
          .filter((agent) => agent.listing !== 'deleted' && findSkill(agent.skills, nameOrSlug))
          .sort(compareByActivity)
          .slice(0, limit),
      )
    },
    async acceptOrderMail({ key, task, events: newEvents, reply, cap }) {
      if (orderMailKeys.has(key)) return 'duplicate'
      if (task && cap) {
        const usage = usageOf(cap.buyerKey, cap.from, cap.to, cap.now)
        if (passesCap(usage, task.priceBaseUnits, cap)) return 'budget_exceeded'
      }
      orderMailKeys.add(key)
      if (task) tasks.set(task.id, structuredClone(task))
      append(newEvents)
      outbox.set(reply.id, structuredClone(reply))
      return 'accepted'
    },
    async claimDueMail(now, leaseUntil, share) {
      const pending = [...outbox.values()]
        .filter((entry) => !entry.sentAt && !entry.failedAt)
        .map((entry) => ({
          id: entry.id,
          ...mailQueueKeys(entry.mail.to),
          dueAt: entry.nextAttemptAt.getTime(),
          leasedUntil: entry.leasedUntil?.getTime() ?? null,
        }))
      const claimed = claimFair(pending, now.getTime(), share).flatMap((id) => outbox.get(id) ?? [])
      for (const entry of claimed)
        Object.assign(entry, {
          attempts: entry.attempts + 1,
          nextAttemptAt: leaseUntil,
          leasedUntil: leaseUntil,
        })
      // Oldest queued first, as the SQL stores answer.
      claimed.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || byKey(a.id, b.id))
      return structuredClone(claimed)
    },
    async settleMail(id, outcome) {
      const entry = outbox.get(id)
      if (!entry || entry.sentAt || entry.failedAt) return
      entry.leasedUntil = null
      if (outcome.outcome === 'sent') entry.sentAt = outcome.at
      else if (outcome.outcome === 'failed')
        Object.assign(entry, { failedAt: outcome.at, lastError: outcome.error })
      else Object.assign(entry, { nextAttemptAt: outcome.nextAttemptAt, lastError: outcome.error })
    },
    async getMail(id) {
      const entry = outbox.get(id)
      return entry ? structuredClone(entry) : null
    },
    async insertWebhook(webhook, max) {
      if (ownedBy(webhook.agentKey, webhook.taskId).length >= max) return false
      webhooks.set(webhook.id, structuredClone(webhook))
      return true
    },
    async listWebhooks(agentKey, taskId) {
      return structuredClone(ownedBy(agentKey, taskId))
    },
    async deleteWebhook(id, agentKey, taskId) {
      const hook = webhooks.get(id)
      if (!hook || hook.agentKey !== agentKey || hook.taskId !== taskId) return false
      webhooks.delete(id)
      for (const [key, row] of deliveries) if (row.webhookId === id) deliveries.delete(key)
      return true
    },
    async webhooksFor(agentKey, taskId) {
      return structuredClone([...ownedBy(agentKey, null), ...ownedBy(agentKey, taskId)])
    },
    async enqueueDeliveries(list, backlogMax) {
      for (const delivery of list) {
        const mine = [...deliveries.values()].filter((row) => row.webhookId === delivery.webhookId)
        const hook = webhooks.get(delivery.webhookId)
        if (!hook || mine.some((row) => row.eventId === delivery.eventId)) continue
        const backlog = mine.filter((row) => row.deliveredAt === null && row.failedAt === null).length
        if (backlog >= backlogMax) hook.droppedDeliveries += 1
        else deliveries.set(delivery.id, toDeliveryRow(delivery))
      }
    },
    async claimDueDeliveries(now, leaseUntil, share) {
      const pending = [...deliveries.values()]
        .filter((row) => row.deliveredAt === null && row.failedAt === null)
        .map((row) => ({
          id: row.id,
          tenant: row.tenant,
          endpoint: row.webhookId,
          dueAt: row.nextAttemptAt,
          leasedUntil: row.leasedUntil,
        }))
      const claimed = claimFair(pending, now.getTime(), share).flatMap((id) => deliveries.get(id) ?? [])
      for (const row of claimed)
        Object.assign(row, {
          attempts: row.attempts + 1,
          nextAttemptAt: leaseUntil.getTime(),
          leasedUntil: leaseUntil.getTime(),
        })
      // Oldest queued first, as the SQL stores answer.
      claimed.sort((a, b) => a.createdAt - b.createdAt || byKey(a.id, b.id))
      return claimed.map((row) => toDeliveryRecord({ ...row }))
    },
    async settleDelivery(id, outcome) {
      const row = deliveries.get(id)
      if (!row || row.deliveredAt !== null || row.failedAt !== null) return
      Object.assign(row, settledColumns(outcome))
    },
    async listDeliveries(webhookId, limit) {
      return [...deliveries.values()]
        .filter((row) => row.webhookId === webhookId)
        .sort((a, b) => b.createdAt - a.createdAt || byKey(b.id, a.id))
        .slice(0, limit)
        .map((row) => toDeliveryRecord({ ...row }))
    },
    async kvGet(key) {
      return kvValue(key)
    },
    async kvPut(key, value, options) {
      kv.set(key, JSON.stringify(value))
      expireKv(key, options?.expiresAt)
    },
    async kvDelete(key) {
      kv.delete(key)
      kvExpiries.delete(key)
    },
    async kvUpdate(key, change) {
      const current = kv.get(key)
      const outcome = change(current === undefined ? null : JSON.parse(current))
      writeKv(key, outcome)
      return outcome.result
    },
    async kvUpdateAll(keys, change) {
      const { writes, result } = change(keys.map((key) => kvValue(key)))
      for (const [index, key] of keys.entries()) writeKv(key, writes[index] ?? { op: 'noop' })
      return result
    },
    async kvSweepExpired(now, limit) {
      const due = [...kvExpiries]
        .filter(([, at]) => at <= now.getTime())
        .sort((a, b) => a[1] - b[1])
        .slice(0, Math.max(0, limit))
      for (const [key] of due) {
        kv.delete(key)
        kvExpiries.delete(key)
      }
      return due.length
    },
    async ping() {},
    async close() {},
  }
}
