import * as v from 'valibot'
import type { Address, Hex } from 'viem'
import { AgentName, nameKey } from './Agent.ts'
import type { BudgetRefusal, BudgetRemaining } from './errors.ts'
import { refundedBaseUnits } from './Job.ts'
import { BUDGET_TYPES } from './MarketMessageTypes.ts'
import { type MarketTypedData, marketTypedData } from './MarketTypedData.ts'
import { amountToNumber } from './Money.ts'
import { Price } from './Skill.ts'
import type { TaskRecord } from './Task.ts'
import { Signature } from './TaskInput.ts'
import { strictFields } from './Validation.ts'

/**
 * The EIP-712 message an agent's owner signs to bound what the agent may spend as a buyer: bound to the marketplace
 * (its base URL) and the agent, amounts in base units (10^-6 USDC), times in Unix seconds. `sellers` empty: any
 * seller. A later `issuedAt` replaces an earlier budget; an older one is never taken back.
 */
export { BUDGET_TYPES }

/** The fields of a SpendingBudget as signed. */
export type SpendingBudget = {
  market: string
  agent: string
  perTaskMax: bigint
  perDayMax: bigint
  sellers: string[]
  expiresAt: bigint
  issuedAt: bigint
}

/** The typed data an owner's wallet signs (viem `signTypedData`). */
export type BudgetTypedData = MarketTypedData<typeof BUDGET_TYPES, 'SpendingBudget', SpendingBudget>

/** The typed data of a budget on the payment chain `chainId`. */
export function budgetTypedData(chainId: number, budget: SpendingBudget): BudgetTypedData {
  return marketTypedData(chainId, BUDGET_TYPES, 'SpendingBudget', budget)
}

/** The most sellers a budget may name. */
export const MAX_BUDGET_SELLERS = 100
/** How far ahead a budget may expire: one year. */
export const MAX_BUDGET_LIFETIME_MS = 366 * 24 * 3600 * 1000
/** How far ahead of the marketplace's clock an issue time may be (clock skew). */
export const BUDGET_ISSUE_SKEW_MS = 5 * 60 * 1000

const Instant = v.pipe(
  v.string('must be a date-time text, e.g. "2026-12-31T00:00:00Z"'),
  v.isoTimestamp('must be a date-time text, e.g. "2026-12-31T00:00:00Z"'),
  v.transform((text) => new Date(text)),
)

/** Body of PUT /api/agents/{name}/budget: the budget as signed, and the owner wallet's EIP-712 signature of it. */
export const BudgetInput = strictFields({
  budget: strictFields({
    agent: AgentName,
    per_task_max: Price,
    per_day_max: Price,
    sellers: v.optional(
      v.pipe(
        v.array(AgentName, 'must be an array of agent names'),
        v.maxLength(MAX_BUDGET_SELLERS, `must name at most ${MAX_BUDGET_SELLERS} sellers`),
      ),
      [],
    ),
    expires_at: Instant,
    issued_at: Instant,
  }),
  signature: v.pipe(
    Signature,
    v.description(
      "The owner's proven wallet's EIP-712 signature of the SpendingBudget typed data made of these fields (docs/budgets.md).",
    ),
  ),
})
/** Validated budget body. */
export type BudgetInput = v.InferOutput<typeof BudgetInput>

/** A budget as the marketplace keeps it: what was signed, by whom, and the signature. */
export type BudgetRecord = {
  agent: string
  perTaskMaxBaseUnits: bigint
  perDayMaxBaseUnits: bigint
  /** Seller name keys; empty: any seller. */
  sellers: string[]
  expiresAt: Date
  issuedAt: Date
  signer: Address
  signature: Hex
}

/** The signed message of a budget body, seconds rounded down as the wire's times are whole seconds when signed. */
export function signedBudgetOf(market: string, input: BudgetInput['budget']): SpendingBudget {
  return {
    market,
    agent: input.agent,
    perTaskMax: input.per_task_max,
    perDayMax: input.per_day_max,
    sellers: input.sellers,
    expiresAt: BigInt(Math.floor(input.expires_at.getTime() / 1000)),
    issuedAt: BigInt(Math.floor(input.issued_at.getTime() / 1000)),
  }
}

/** The record kept for a signed budget body. */
export function budgetRecordOf(input: BudgetInput, signer: Address): BudgetRecord {
  const { budget } = input
  return {
    agent: budget.agent,
    perTaskMaxBaseUnits: budget.per_task_max,
    perDayMaxBaseUnits: budget.per_day_max,
    sellers: budget.sellers.map(nameKey),
    expiresAt: new Date(Math.floor(budget.expires_at.getTime() / 1000) * 1000),
    issuedAt: new Date(Math.floor(budget.issued_at.getTime() / 1000) * 1000),
    signer,
    signature: input.signature,
  }
}

/** A budget as JSON for the key-value store. */
export function budgetToJson(budget: BudgetRecord): Record<string, unknown> {
  return {
    ...budget,
    perTaskMaxBaseUnits: budget.perTaskMaxBaseUnits.toString(),
    perDayMaxBaseUnits: budget.perDayMaxBaseUnits.toString(),
    expiresAt: budget.expiresAt.getTime(),
    issuedAt: budget.issuedAt.getTime(),
  }
}

/** A budget read back from the key-value store; null for anything else. */
export function budgetFromJson(json: unknown): BudgetRecord | null {
  if (typeof json !== 'object' || json === null) return null
  const value = json as Record<string, unknown>
  if (typeof value.perDayMaxBaseUnits !== 'string') return null
  return {
    agent: String(value.agent),
    perTaskMaxBaseUnits: BigInt(value.perTaskMaxBaseUnits as string),
    perDayMaxBaseUnits: BigInt(value.perDayMaxBaseUnits),
    sellers: (value.sellers as string[]) ?? [],
    expiresAt: new Date(value.expiresAt as number),
    issuedAt: new Date(value.issuedAt as number),
    signer: value.signer as Address,
    signature: value.signature as Hex,
  }
}

/** The key-value key of an agent's budget. */
export const budgetKey = (agentName: string) => `budget:${nameKey(agentName)}`

/** A buyer's spending on one budget day: paid (the price, or more when overpaid, less refunds) and held by open unpaid orders. */
export type BudgetUsage = { spentBaseUnits: bigint; heldBaseUnits: bigint }

/** The budget day holding `now` (UTC calendar day): its start and the next day's. */
export function budgetDay(now: Date): { from: Date; to: Date } {
  const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()))
  return { from, to: new Date(from.getTime() + 24 * 3600 * 1000) }
}

/**
 * What the store checks in the transaction that stores an order naming a budgeted buyer: the buyer's orders of the
 * budget day `[from, to)`, paid or still held at `now`, plus this one, must stay within `limitBaseUnits`.
 */
export type SpendCap = { buyerKey: string; limitBaseUnits: bigint; from: Date; to: Date; now: Date }

/** True when an order of `priceBaseUnits` on top of the day's `usage` passes the cap's limit. */
export function passesCap(
  usage: BudgetUsage,
  priceBaseUnits: bigint,
  cap: Pick<SpendCap, 'limitBaseUnits'>,
): boolean {
  return usage.spentBaseUnits + usage.heldBaseUnits + priceBaseUnits > cap.limitBaseUnits
}

/** The remaining allowance of `budget` today given `usage` (never below zero). */
export function remainingToday(budget: BudgetRecord, usage: BudgetUsage): bigint {
  const left = budget.perDayMaxBaseUnits - usage.spentBaseUnits - usage.heldBaseUnits
  return left > 0n ? left : 0n
}

/** The refusal's members: why and what remains. */
export function budgetRemaining(
  budget: BudgetRecord,
  usage: BudgetUsage,
  reason: BudgetRefusal,
  now: Date,
): BudgetRemaining {
  return {
    reason,
    per_task_max: amountToNumber(budget.perTaskMaxBaseUnits),
    per_day_max: amountToNumber(budget.perDayMaxBaseUnits),
    remaining_today: amountToNumber(remainingToday(budget, usage)),
    resets_at: budgetDay(now).to.toISOString(),
    expires_at: budget.expiresAt.toISOString(),
  }
}

/** A budget as GET …/budget shows it, with the budget day's spending. */
export type BudgetView = {
  agent: string
  per_task_max: number
  per_day_max: number
  sellers: string[]
  expires_at: string
  issued_at: string
  signer: Address
  active: boolean
  day: string
  spent_today: number
  held_today: number
  remaining_today: number
  resets_at: string
}

/** The view of `budget` at `now` with the day's `usage`. */
export function toBudgetView(budget: BudgetRecord, usage: BudgetUsage, now: Date): BudgetView {
  const day = budgetDay(now)
  return {
    agent: budget.agent,
    per_task_max: amountToNumber(budget.perTaskMaxBaseUnits),
    per_day_max: amountToNumber(budget.perDayMaxBaseUnits),
    sellers: budget.sellers,
    expires_at: budget.expiresAt.toISOString(),
    issued_at: budget.issuedAt.toISOString(),
    signer: budget.signer,
    active: budget.expiresAt > now,
    day: day.from.toISOString().slice(0, 10),
    spent_today: amountToNumber(usage.spentBaseUnits),
    held_today: amountToNumber(usage.heldBaseUnits),
    remaining_today: amountToNumber(remainingToday(budget, usage)),
    resets_at: day.to.toISOString(),
  }
}

/**
 * Why an order of `priceBaseUnits` from `seller` is outside `budget` at `now` before the day's spending is counted
 * (expired, a seller it does not name, over the per-task maximum); null when only the day's total can refuse it.
 */
export function budgetRefusalOf(
  budget: BudgetRecord,
  seller: string,
  priceBaseUnits: bigint,
  now: Date,
): BudgetRefusal | null {
  if (budget.expiresAt <= now) return 'expired'
  if (budget.sellers.length > 0 && !budget.sellers.includes(nameKey(seller))) return 'seller'
  if (priceBaseUnits > budget.perTaskMaxBaseUnits) return 'per_task'
  return null
}

/** What one order spends of its buyer's day at `now` (the rule the SQL stores' budgetUsage states again). */
export function taskSpending(task: TaskRecord, now: Date): BudgetUsage {
  if (task.payment) {
    // What left the buyer: the price, or more when it paid more (an overpayment is spent too), less refunds.
    let paid = task.priceBaseUnits
    if (task.payment.amountBaseUnits > paid) paid = task.payment.amountBaseUnits
    const left = paid - refundedBaseUnits(task.entries)
    return { spentBaseUnits: left > 0n ? left : 0n, heldBaseUnits: 0n }
  }
  const open = task.status === 'pending_payment' && (task.expiresAt === null || task.expiresAt > now)
  return { spentBaseUnits: 0n, heldBaseUnits: open ? task.priceBaseUnits : 0n }
}
