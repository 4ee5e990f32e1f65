import { AsyncLocalStorage } from 'node:async_hooks'

// How long a request may wait on the payment chain is a fact about the whole request, not the one chain call it is
// making: a request that makes four calls to a frozen RPC must not wait four read bounds. Each request's deadline is
// kept in an async-local scope, so the chain adapters read it without the actions passing anything along. Work outside
// any scope (the background re-checks, the job escrow's follower) keeps each call's own bound.

/** The chain time one request may spend when the host names none (CHAIN_REQUEST_BUDGET_MS): one read bound. */
export const DEFAULT_CHAIN_BUDGET_MS = 10_000

/** One request's chain budget: when it ends on the clock that measures it, and whether its one timer has fired. */
type ChainBudget = {
  deadline: number
  now: () => number
  spent: boolean
  /** Resolves when the budget is spent; made by the first call that waits on it. */
  expiry: Promise<void> | null
  timer: ReturnType<typeof setTimeout> | undefined
}

const budgets = new AsyncLocalStorage<ChainBudget>()

/** A monotonic clock in milliseconds (never moved by a change of the system's date). */
const monotonic = () => performance.now()

/**
 * Runs `work` as one request under one chain budget of `budgetMs` (the default when undefined): every chain call it
 * makes waits at most what remains of it. Inside a budget already open, `work` shares that one (a request that runs
 * another action spends one budget). `now` is the clock the budget is measured on (a test's).
 * @example await inChainBudget(10_000, () => row.call(market, call))
 */
export async function inChainBudget<T>(
  budgetMs: number | undefined,
  work: () => Promise<T>,
  now: () => number = monotonic,
): Promise<T> {
  if (budgets.getStore()) return work()
  const budget: ChainBudget = {
    deadline: now() + (budgetMs ?? DEFAULT_CHAIN_BUDGET_MS),
    now,
    spent: false,
    expiry: null,
    timer: undefined,
  }
  try {
    return await budgets.run(budget, work)
  } finally {
    clearTimeout(budget.timer)
  }
}

/**
 * The milliseconds the chain call starting now may wait: its own `boundMs` outside any budget, else the least of it
 * and what remains of the request's budget, in whole milliseconds; 0 once the budget is spent (a read is then not
 * made at all).
 * @example const timeoutMs = chainCallTimeout(10_000)
 */
export function chainCallTimeout(boundMs: number): number {
  const budget = budgets.getStore()
  if (!budget) return boundMs
  if (budget.spent) return 0
  return Math.max(0, Math.min(boundMs, Math.floor(budget.deadline - budget.now())))
}

/**
 * A promise that resolves when the request's chain budget is spent (null outside any budget): a call waiting on the
 * chain gives up then. One timer per request ends every call at once, and marks the budget spent before any of them
 * hears it, so no call starts after another was given up for the budget.
 * @example const spent = chainBudgetExpiry(); spent?.then(() => reject(timeoutError()))
 */
export function chainBudgetExpiry(): Promise<void> | null {
  const budget = budgets.getStore()
  if (!budget) return null
  budget.expiry ??= new Promise<void>((resolve) => {
    const end = () => {
      budget.spent = true
      resolve()
    }
    const left = budget.deadline - budget.now()
    if (left <= 0 || budget.spent) end()
    else budget.timer = setTimeout(end, Math.ceil(left))
  })
  return budget.expiry
}

/**
 * An object standing for the request making this call (null outside any request): the scope that holds its chain
 * budget is the one request scope, so other layers keep their per-request facts in a WeakMap keyed by it (the
 * PostgreSQL store counts a request's wait on the database across its calls, store-postgres admission.ts).
 * @example const request = currentRequest(); if (request) waited.set(request, (waited.get(request) ?? 0) + ms)
 */
export function currentRequest(): object | null {
  return budgets.getStore() ?? null
}

/**
 * Runs `work` outside any request's scope: background work a request sets going (a pass it wakes, endings it leaves
 * to write later) must not be counted, ordered or bounded as that request, which has long been answered by then.
 * @example timer = setTimeout(() => outsideRequest(fire), ms)
 */
export function outsideRequest<T>(work: () => T): T {
  return budgets.exit(work)
}
