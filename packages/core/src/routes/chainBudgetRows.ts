import { inChainBudget } from '../ports/chainBudget.ts'
import type { RouteAuth, RouteRow } from './RouteRow.ts'

/** The credentials a request may carry without reaching the chain (a wallet proof may check a contract wallet on it). */
const OFF_CHAIN_AUTH: ReadonlySet<RouteAuth> = new Set(['none', 'bearer', 'webhookSecret'])

/**
 * True when a row's call may reach the payment chain: every write (orders, payments, reviews), and any read a wallet
 * proves. A read with no credential but an API key reads the store alone.
 */
export function mayReachChain(row: Pick<RouteRow, 'method' | 'auth' | 'optionalAuth'>): boolean {
  return (
    row.method !== 'GET' ||
    !OFF_CHAIN_AUTH.has(row.auth) ||
    (row.optionalAuth !== undefined && !OFF_CHAIN_AUTH.has(row.optionalAuth))
  )
}

/**
 * `row` whose call runs under one chain budget (ports/chainBudget.ts), the market's `chain.requestBudgetMs`: every
 * chain call the request makes shares it, so a frozen RPC costs the request one budget, whatever number of calls it
 * makes. Every host serving the row (HTTP, MCP, `createFetchHandler`) gets the same bound. A row that cannot reach the
 * chain (`mayReachChain`) is left as it is: the budget's async-local scope cost every public read about a tenth of
 * its CPU (bench/CHANGES.md).
 */
export function withChainBudget(row: RouteRow): RouteRow {
  if (!mayReachChain(row)) return row
  return {
    ...row,
    call: (market, call) => inChainBudget(market.config.chain.requestBudgetMs, () => row.call(market, call)),
  }
}
