import { type Signer, signTyped } from './typedData.ts'
import type { AgentCard } from './types.ts'

/** A spending budget as an owner sets it: USDC amounts (at most 6 decimals), date-time texts, optional sellers. */
export type BudgetTerms = {
  agent: string
  per_task_max: number | string
  per_day_max: number | string
  /** Seller names; empty or absent: any seller. */
  sellers?: string[]
  expires_at: string
  /** When it was issued (default: now); a later one replaces the budget in effect. */
  issued_at?: string
}

/** Base units (10^-6 USDC) of a USDC amount, exactly (no float arithmetic). */
export function baseUnits(amount: number | string): bigint {
  const text = String(amount)
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(text)
  if (!match) throw new Error(`${text} is not a USDC amount with at most 6 decimals`)
  return BigInt(match[1] ?? '0') * 1_000_000n + BigInt((match[2] ?? '').padEnd(6, '0'))
}

/** Unix seconds of a date-time text, rounded down as the market signs them. */
const seconds = (instant: string) => BigInt(Math.floor(Date.parse(instant) / 1000))

/**
 * The body of `PUT /api/agents/{name}/budget`: the terms and the owner's EIP-712 SpendingBudget signature, under the
 * market (its base URL) and chain an agent card names (`commerce.payer_proof`'s domain and message).
 */
export async function signedBudget(terms: BudgetTerms, card: AgentCard, owner: Signer) {
  const { domain, message } = card._extensions.commerce.payer_proof
  const budget = {
    ...terms,
    sellers: terms.sellers ?? [],
    // Whole seconds: what is signed is the time to the second.
    issued_at: terms.issued_at ?? new Date(Math.floor(Date.now() / 1000) * 1000).toISOString(),
  }
  const signature = await signTyped(owner, {
    domain: { name: 'agentmarket', version: '1', chainId: domain.chainId },
    primaryType: 'SpendingBudget',
    message: {
      market: message.market,
      agent: budget.agent,
      perTaskMax: baseUnits(budget.per_task_max),
      perDayMax: baseUnits(budget.per_day_max),
      sellers: budget.sellers,
      expiresAt: seconds(budget.expires_at),
      issuedAt: seconds(budget.issued_at),
    },
  })
  return { budget, signature }
}
