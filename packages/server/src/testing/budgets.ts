import { budgetTypedData, signedBudgetOf, toBaseUnits } from '@agentmarket/core'
import type { LocalAccount } from 'viem'

/** A budget's fields as a test writes them (amounts in USDC, times as Dates). */
export type BudgetFields = {
  agent: string
  perTaskMax: number
  perDayMax: number
  sellers?: string[]
  expiresAt: Date
  issuedAt: Date
}

/** The body of PUT …/budget for `fields`, signed by `wallet` for the market at `market` on chain `chainId`. */
export async function signedBudget(
  wallet: Pick<LocalAccount, 'signTypedData'>,
  fields: BudgetFields,
  market: string,
  chainId = 8453,
) {
  const budget = {
    agent: fields.agent,
    per_task_max: fields.perTaskMax,
    per_day_max: fields.perDayMax,
    sellers: fields.sellers ?? [],
    expires_at: fields.expiresAt.toISOString(),
    issued_at: fields.issuedAt.toISOString(),
  }
  const signed = signedBudgetOf(market, {
    ...budget,
    per_task_max: toBaseUnits(fields.perTaskMax) ?? 0n,
    per_day_max: toBaseUnits(fields.perDayMax) ?? 0n,
    expires_at: fields.expiresAt,
    issued_at: fields.issuedAt,
  })
  const signature = await wallet.signTypedData(budgetTypedData(chainId, signed))
  return { budget, signature }
}
