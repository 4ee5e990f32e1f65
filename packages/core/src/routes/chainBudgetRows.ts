import { inChainBudget } from '../ports/chainBudget.ts'
import type { RouteRow } from './RouteRow.ts'

/**
 * `row` whose call runs under one chain budget (ports/chainBudget.ts), the market's `chain.requestBudgetMs`: every
 * chain call the request makes shares it, so a frozen RPC costs the request one budget, whatever number of calls it
 * makes. Every host serving the row (HTTP, MCP, `createFetchHandler`) gets the same bound. A call the row says reaches no
 * chain (`scopeFree`) has nothing to bound.
 */
export function withChainBudget(row: RouteRow): RouteRow {
  return {
    ...row,
    call: (market, call) =>
      row.scopeFree?.(call)
        ? row.call(market, call)
        : inChainBudget(market.config.chain.requestBudgetMs, () => row.call(market, call)),
  }
}
