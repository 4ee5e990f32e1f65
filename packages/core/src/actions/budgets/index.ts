import type { AgentStore, KvStore, TaskStore, UserStore } from '../../ports/Store.ts'
import type { ActionContext } from '../context.ts'
import { readBudgetAction } from './readBudget.ts'
import { setBudgetAction } from './setBudget.ts'

/** Spending budgets: an owner bounds what its agent may spend as a buyer (docs/budgets.md). */
export function budgetActions(context: ActionContext<AgentStore & UserStore & TaskStore & KvStore>) {
  return {
    /** Sets an agent's budget, signed by its owner's proven wallet. */
    setBudget: setBudgetAction(context),
    /** An agent's budget and the day's spending (its key). */
    readBudget: readBudgetAction(context),
  }
}
