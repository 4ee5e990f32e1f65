import { currentScope, inScope, RequestScope } from './requestScope.ts'

// How long a request may wait on the payment chain is a fact about the whole request, not the one chain call it is
// making: a request that makes four calls to a frozen RPC must not wait four read bounds. Each request's deadline is
// kept in its scope (requestScope.ts), so the chain adapters read it without the actions passing anything along. Work
// outside any request (the background re-checks, the job escrow's follower) keeps each call's own bound.

/** The chain time one request may spend when the host names none (CHAIN_REQUEST_BUDGET_MS): one read bound. */
export const DEFAULT_CHAIN_BUDGET_MS = 10_000

/** A monotonic clock in milliseconds (never moved by a change of the system's date). */
const monotonic = () => performance.now()

/** Clears the budget's timer once its request has ended. */
function endsWithAnswer(scope: RequestScope, answer: Promise<unknown>): void {
  const clear = () => clearTimeout(scope.timer)
  answer.then(clear, clear)
}

/**
 * Runs `work` as one request under one chain budget of `budgetMs` (the default when undefined): every chain call it
 * makes waits at most what remains of it. Inside a request already open, `work` shares its budget (a request that
 * runs another action spends one budget). `now` is the clock the budget is measured on (a test's). The request's one
 * scope (requestScope.ts) is entered here; the promise is `work`'s own.
 * @example await inChainBudget(10_000, () => row.call(market, call))
 */
export function inChainBudget<T>(
  budgetMs: number | undefined,
  work: () => Promise<T>,
  now: () => number = monotonic,
): Promise<T> {
  const outer = currentScope()
  if (outer?.request) return work()
  const scope = new RequestScope(true, now() + (budgetMs ?? DEFAULT_CHAIN_BUDGET_MS), now)
  if (outer) {
    // A request opened inside writes counted outside any: its writes are theirs too.
    scope.writing = outer.writing
    scope.wrote = outer.wrote
  }
  const answer = inScope(scope, work)
  scope.answer = answer
  // A timer made before `work` first waited; one made later is cleared by chainBudgetExpiry's own hook.
  if (scope.timer !== undefined) endsWithAnswer(scope, answer)
  if (outer) {
    const carry = () => {
      outer.wrote ||= scope.wrote
    }
    answer.then(carry, carry)
  }
  return answer
}

/** The request's scope, when this call runs in a request. */
function budgetOf(): RequestScope | null {
  const scope = currentScope()
  return scope?.request ? scope : null
}

/**
 * The milliseconds the chain call starting now may wait: its own `boundMs` outside any budget, else the least of it
 * and what remains of the request's budget, in whole milliseconds; 0 once the budget is spent (a read is then not
 * made at all).
 * @example const timeoutMs = chainCallTimeout(10_000)
 */
export function chainCallTimeout(boundMs: number): number {
  const budget = budgetOf()
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
  const budget = budgetOf()
  if (!budget) return null
  budget.expiry ??= new Promise<void>((resolve) => {
    const end = () => {
      budget.spent = true
      resolve()
    }
    const left = budget.deadline - budget.now()
    if (left <= 0 || budget.spent) return end()
    budget.timer = setTimeout(end, Math.ceil(left))
    if (budget.answer) endsWithAnswer(budget, budget.answer)
  })
  return budget.expiry
}
