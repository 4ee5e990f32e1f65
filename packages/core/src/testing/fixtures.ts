import { strictEqual as equal } from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import type { Address, Hex } from 'viem'
import type { AgentRecord } from '../Agent.ts'
import type { FairShare } from '../FairQueue.ts'
import type { FeedEventInput, FeedEventKind } from '../Feed.ts'
import type { MilestoneRecord } from '../Milestone.ts'
import type { AgentClaim, OnlineEvent, Store, TaskListQuery } from '../ports/Store.ts'
import type { SkillRecord } from '../Skill.ts'
import type { IdempotentAnswer, TaskPayment, TaskRecord } from '../Task.ts'
import type { UserRecord } from '../User.ts'

/** The `test` of a runner, as each part of the suite takes it (a time limit in ms for the long ones). */
export type StoreTest = (name: string, body: () => Promise<void> | void, timeout?: number) => void

/** Wraps a case so it runs on a fresh store that is closed afterwards. */
export type WithStore = (body: (store: Store) => Promise<void>) => () => Promise<void>

/** Every task of an agent, in work-queue order. */
export const allTasks: TaskListQuery = {
  statuses: ['pending_payment', 'paid', 'completed'],
  order: 'work_queue',
  limit: 50,
  offset: 0,
}

/** The suite's epoch: every time is a few minutes after it. */
export const T0 = new Date('2026-01-01T00:00:00.000Z')
/** `minutes` after T0. */
/** A fair share no conformance case reaches: a claim takes every due item (up to 100). */
export const WIDE: FairShare = { limit: 100, perTenant: 100, perEndpoint: 100 }

/** The instant `minutes` after T0. */
export const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000)

/** A free skill record for tests; overrides make it purchasable or rename it. */
export function sampleSkill(overrides: Partial<SkillRecord> = {}): SkillRecord {
  return {
    name: 'Ping',
    slug: 'ping',
    description: null,
    type: 'free',
    priceBaseUnits: null,
    currency: 'USDC',
    sla: null,
    slaSeconds: null,
    reviewSeconds: 0,
    reveal: 'on_delivery',
    input: null,
    url: null,
    ...overrides,
  }
}

/** A complete agent record for store tests. */
export function sampleAgent(overrides: Partial<AgentRecord> = {}): AgentRecord {
  return {
    name: 'sample-agent',
    bio: null,
    platform: 'other',
    model: null,
    walletAddress: null,
    basename: null,
    skills: [],
    status: 'free',
    apiKeyHash: `hash-of-${overrides.name ?? 'sample-agent'}`,
    pairingCodeHash: `pairing-of-${overrides.name ?? 'sample-agent'}`,
    pairingCodeUsedAt: null,
    pairingCodeExpiresAt: null,
    ownerUsername: null,
    lastSeen: null,
    lastActiveAt: T0,
    createdAt: T0,
    updatedAt: T0,
    revision: 1,
    verifiedMilestones: 0,
    claimedMilestones: 0,
    completedTasks: 0,
    onTimeTasks: 0,
    lateTasks: 0,
    refundedTasks: 0,
    disputedTasks: 0,
    ratingCount: 0,
    ratingSum: 0,
    ratedBuyers: 0,
    ratingVotes: 0,
    trustCreditBaseUnits: 0n,
    payingBuyers: 0,
    establishedCreditBaseUnits: 0n,
    establishedBuyers: 0,
    ratingWeight: 0,
    reliabilityVotes: 0,
    reliabilityWeight: 0,
    ownerProven: false,
    ...overrides,
  }
}

/** A complete user record for store tests. */
export function sampleUser(overrides: Partial<UserRecord> = {}): UserRecord {
  return {
    username: 'ann',
    walletAddress: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
    bio: null,
    showcase: {},
    inviteCode: `inv_${overrides.username ?? 'ann'}`,
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  }
}

/** A complete task awaiting payment for store tests: a unique id, a paid skill of 'sample-agent', nothing else set. */
export function sampleTask(overrides: Partial<TaskRecord> = {}): TaskRecord {
  return {
    id: `task_${randomBytes(16).toString('hex')}`,
    agentName: 'sample-agent',
    skillName: 'Search',
    skillSlug: 'search',
    sla: '1h',
    status: 'pending_payment',
    priceBaseUnits: 10_000n,
    payTo: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
    params: null,
    buyer: null,
    buyerEmail: null,
    buyerWallet: null,
    payment: null,
    pendingCheck: null,
    resultUrl: null,
    idempotency: null,
    clientKey: '',
    expiresAt: null,
    createdAt: T0,
    completedAt: null,
    slaSeconds: null,
    reviewSeconds: 0,
    reveal: 'on_delivery',
    deliveredAt: null,
    outcome: null,
    entries: [],
    jobId: null,
    rating: null,
    ...overrides,
  }
}

/** A 32-byte hex value (a tx hash or an escrow task id) that differs for each `n` and `tag`. */
export const hex32 = (n: number, tag = 0xa): Hex => `0x${tag.toString(16)}${n.toString(16).padStart(63, '0')}`

/** An on-chain transfer numbered `n` (its own tx hash), of 10,000 base units from one payer, overridable. */
export function samplePayment(n: number, overrides: Partial<TaskPayment> = {}): TaskPayment {
  return {
    method: 'transfer',
    txHash: hex32(n),
    escrowTaskId: null,
    amountBaseUnits: 10_000n,
    from: '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
    at: at(30),
    ...overrides,
  }
}

/** A paid task: status and payment set together. */
export function paidTask(n: number, overrides: Partial<TaskRecord> = {}): TaskRecord {
  return sampleTask({ status: 'paid', payment: samplePayment(n), ...overrides })
}

/** The first answer remembered under an Idempotency-Key. */
export function idempotencyOf(key: string, body: unknown = { ok: true }): IdempotentAnswer {
  return { key, fingerprint: `fp-${key}`, status: 201, body }
}

/** The feed event of `kind` for `task`. */
export function taskEvent(kind: FeedEventKind, task: TaskRecord): FeedEventInput {
  return sampleEvent({ kind, agent: task.agentName, data: { task_id: task.id } })
}

/** A feed event of 'sample-agent', overridable. */
export function sampleEvent(overrides: Partial<FeedEventInput> = {}): FeedEventInput {
  return {
    kind: 'agent.updated',
    at: T0,
    agent: 'sample-agent',
    summary: 'something happened',
    data: { fields: ['bio'] },
    ...overrides,
  }
}

/** The feed event a heartbeat writes when it brings `name` online at `minute`. */
export function online(name: string, minute: number): OnlineEvent {
  return {
    event: sampleEvent({ kind: 'agent.online', agent: name, at: at(minute), data: {} }),
    notSeenSince: at(minute - 5),
  }
}

/** A claim of the agent holding `pairingCodeHash` by `user`. */
export function claimOf(pairingCodeHash: string, user: UserRecord, agentName: string): AgentClaim {
  return {
    pairingCodeHash,
    newUser: user,
    at: at(9),
    event: sampleEvent({ kind: 'agent.claimed', agent: agentName, data: { owner: user.username } }),
  }
}

/** A milestone of 'sample-agent', overridable. */
export function sampleMilestone(overrides: Partial<MilestoneRecord>): MilestoneRecord {
  return {
    id: `ms_${Math.random().toString(16).slice(2)}`,
    agentName: 'sample-agent',
    date: '2026-01-01',
    title: 'a milestone',
    description: null,
    proof: null,
    trust: 'claimed',
    createdAt: T0,
    ...overrides,
  }
}

/**
 * Completes a paid task as the seller's call does without a review window (a compare-and-set from `paid`, counted
 * on time): 'completed', or 'not_paid' when the task is not paid.
 */
export async function complete(
  store: Store,
  id: string,
  resultUrl: string,
  when: Date,
  events: FeedEventInput[] = [],
): Promise<'completed' | 'not_paid'> {
  const changed = await store.changeTask({
    id,
    from: ['paid'],
    to: 'completed',
    at: when,
    resultUrl,
    deliveredAt: when,
    completedAt: when,
    outcome: 'delivered',
    counts: { completed: true, onTime: true },
    events,
  })
  return changed ? 'completed' : 'not_paid'
}

/** A task of 'sample-agent' paid by `payment` through markTaskPaid, then completed. */
export const deliver = async (store: Store, payment: TaskPayment): Promise<TaskRecord> => {
  const task = sampleTask()
  await store.insertTask(task, [])
  equal(await store.markTaskPaid(task.id, payment, []), 'paid')
  equal(await complete(store, task.id, 'https://example.com/r', at(40)), 'completed')
  return task
}

/** What 'sample-agent' holds of trust credit: the sum and the number of paying buyer wallets. */
export const trustOf = async (store: Store) => {
  const agent = await store.getAgent('sample-agent')
  return { credit: agent?.trustCreditBaseUnits, buyers: agent?.payingBuyers }
}

/** A buyer wallet for the trust-credit cases. */
export const BUYER_A: Address = '0x00000000000000000000000000000000000000a1'
/** A second buyer wallet, mixed case. */
export const BUYER_B: Address = '0x00000000000000000000000000000000000000B2'
/** One USDC in base units. */
export const USDC = 1_000_000n

/** `address` with its hex digits upper-cased: the same wallet, written otherwise. */
export const inCapitals = (address: Address): Address => `0x${address.slice(2).toUpperCase()}`
