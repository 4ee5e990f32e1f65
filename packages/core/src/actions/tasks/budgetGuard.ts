import { type AgentRecord, nameKey } from '../../Agent.ts'
import {
  type BudgetRecord,
  type BudgetUsage,
  budgetDay,
  budgetFromJson,
  budgetKey,
  budgetRefusalOf,
  budgetRemaining,
  passesCap,
  type SpendCap,
} from '../../Budget.ts'
import { hashSecret } from '../../Credentials.ts'
import { BudgetExceededError, type BudgetRefusal, UnauthorizedError } from '../../errors.ts'
import type { FeedEventInput } from '../../Feed.ts'
import { bearerKey } from '../../http.ts'
import { formatAmount } from '../../Money.ts'
import type { AgentStore, InsertTaskResult, KvStore, TaskStore } from '../../ports/Store.ts'
import type { TaskRecord } from '../../Task.ts'
import { type ActionContext, authenticate } from '../context.ts'

/** The budget an order is held to and the cap its insert checks; null when its buyer has none or it costs nothing. */
export type OrderGuard = { budget: BudgetRecord; cap: SpendCap } | null

const WHY: Record<BudgetRefusal, string> = {
  expired: 'the budget has expired; its owner signs a new one',
  seller: 'the budget does not name this seller',
  per_task: "the price is over the budget's per-task maximum",
  per_day: "the order would take the buyer past the budget's daily maximum",
}

/** 403 budget_exceeded for `task` under `budget`: why, and what remains. */
export function budgetExceeded(
  budget: BudgetRecord,
  usage: BudgetUsage,
  reason: BudgetRefusal,
  task: TaskRecord,
  now: Date,
): BudgetExceededError {
  const remaining = budgetRemaining(budget, usage, reason, now)
  return new BudgetExceededError(
    `"${task.buyer}" may not spend ${formatAmount(task.priceBaseUnits)} USDC on this order: ${WHY[reason]}. ${remaining.remaining_today} USDC remains today (until ${remaining.resets_at}); the problem's budget member has the limits.`,
    remaining,
  )
}

/**
 * The budget `task` (an order not stored yet) is held to. An order naming a buyer whose owner set a budget must carry
 * that buyer's API key (`buyerKey`: 401 buyer_key_required without it, 401/403 with a wrong one), so nobody else can
 * spend or block its budget; a paid order must then be within the budget's expiry, sellers and per-task maximum
 * (403 budget_exceeded). The day's total is checked by the store when the order is stored (`insertOrder`).
 */
export async function orderGuard(
  context: ActionContext<AgentStore & TaskStore & KvStore>,
  seller: Pick<AgentRecord, 'name'>,
  task: TaskRecord,
  buyerKey: string | undefined,
): Promise<OrderGuard> {
  if (task.buyer === null) return null
  const budget = budgetFromJson(await context.store.kvGet(budgetKey(task.buyer)))
  if (!budget) {
    // Without a budget a key is not asked for; one that is the buyer's still marks the order as the buyer's own.
    if (buyerKey && (await isKeyOf(context, task.buyer, buyerKey))) task.buyerKey = nameKey(task.buyer)
    return null
  }
  if (!buyerKey)
    throw new UnauthorizedError(
      `"${task.buyer}" has a spending budget, so an order naming it as buyer must carry its API key: Authorization: Bearer <its key>, or the Buyer-Key header where Authorization carries a payment.`,
      'buyer_key_required',
    )
  await authenticate(context, task.buyer, buyerKey)
  // Only orders that carried the buyer's key count on its budget: nobody else can fill its day.
  task.buyerKey = nameKey(task.buyer)
  if (task.priceBaseUnits === 0n) return null
  // The day is the order's own (its creation), so an order made just before midnight counts on that day.
  const now = task.createdAt
  const refusal = budgetRefusalOf(budget, seller.name, task.priceBaseUnits, now)
  const cap = { buyerKey: task.buyerKey, limitBaseUnits: budget.perDayMaxBaseUnits, ...budgetDay(now), now }
  if (refusal) throw budgetExceeded(budget, await usageOf(context, cap), refusal, task, now)
  return { budget, cap }
}

/** True when `apiKey` is the key of agent `name` (one read of the key's owner). */
async function isKeyOf(context: ActionContext<AgentStore>, name: string, apiKey: string): Promise<boolean> {
  const owner = await context.store.findAgentNameByKeyHash(hashSecret(apiKey))
  return owner !== null && nameKey(owner) === nameKey(name)
}

/** The day's spending under `cap` as it stands (no lock: for answers, not for decisions). */
const usageOf = (context: ActionContext<TaskStore>, cap: SpendCap) =>
  context.store.budgetUsage(cap.buyerKey, cap.from, cap.to, cap.now)

/**
 * Before offering a payment (a 402: no money moves yet), refuses an order the day's spending already leaves no room
 * for, so a buyer is not asked to pay for an order that will be refused. The insert still decides.
 */
export async function refuseIfDaySpent(
  context: ActionContext<TaskStore>,
  task: TaskRecord,
  guard: OrderGuard,
) {
  if (!guard) return
  const usage = await usageOf(context, guard.cap)
  if (passesCap(usage, task.priceBaseUnits, guard.cap))
    throw budgetExceeded(guard.budget, usage, 'per_day', task, guard.cap.now)
}

/** Stores an order and its events within its guard's cap: 403 budget_exceeded (nothing stored) when over it. */
export async function insertOrder(
  context: ActionContext<TaskStore>,
  task: TaskRecord,
  events: FeedEventInput[],
  guard: OrderGuard,
): Promise<Exclude<InsertTaskResult, { outcome: 'budget_exceeded' }>> {
  const stored = await context.store.insertTask(task, events, guard?.cap)
  if (stored.outcome !== 'budget_exceeded') return stored
  // A retry under the Idempotency-Key of an order already stored replays it, whatever the day holds now.
  const first =
    task.idempotency &&
    (await context.store.findIdempotentAnswer(task.agentName, task.clientKey, task.idempotency.key))
  if (first) return { outcome: 'replay', answer: first }
  // A guard exists whenever the store could refuse.
  throw budgetExceeded(guard?.budget as BudgetRecord, stored.usage, 'per_day', task, context.clock.now())
}

/** Gives back the price a budgeted order held when its payment was not taken (the order expires, never paid). */
export async function releaseHold(
  { store, clock }: ActionContext<TaskStore>,
  task: TaskRecord,
): Promise<void> {
  await store.changeTask({
    id: task.id,
    from: ['pending_payment'],
    to: 'expired',
    at: clock.now(),
    events: [],
  })
}

/** The buyer's API key of a request: its Buyer-Key header, else its bearer key (`bearer`: the Authorization one). */
export function buyerKeyOf(
  headers: Headers,
  bearer: string | undefined = bearerKey(headers.get('authorization')),
): string | undefined {
  return headers.get('buyer-key')?.trim() || bearer
}
