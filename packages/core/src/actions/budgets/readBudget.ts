import { type BudgetView, budgetFromJson, budgetKey } from '../../Budget.ts'
import { NotFoundError } from '../../errors.ts'
import { type ActionContext, authenticate } from '../context.ts'
import { viewOf } from './setBudget.ts'

/** The `readBudget` action: an agent reads its own budget and the day's spending. */
export function readBudgetAction(context: ActionContext) {
  /** Agent `name`'s budget with today's spending (its API key); 404 budget_not_found when its owner set none. */
  return async function readBudget(name: string, apiKey: string | undefined): Promise<BudgetView> {
    const agent = await authenticate(context, name, apiKey)
    const budget = budgetFromJson(await context.store.kvGet(budgetKey(agent.name)))
    if (!budget)
      throw new NotFoundError(
        'budget_not_found',
        `"${agent.name}" has no spending budget; its owner sets one with PUT /api/agents/${agent.name}/budget.`,
      )
    return viewOf(context, budget, context.clock.now())
  }
}
