import { type BudgetView, budgetFromJson, budgetKey } from '../../Budget.ts'
import { NotFoundError } from '../../errors.ts'
import type { AgentStore, KvStore, TaskStore, UserStore } from '../../ports/Store.ts'
import { agentOrOwner } from '../agents/agentOrOwner.ts'
import type { ActionContext } from '../context.ts'
import type { ProvedRequest } from '../users/walletProof.ts'
import { viewOf } from './setBudget.ts'

/** The `readBudget` action: an agent, or its owner, reads its budget and the day's spending. */
export function readBudgetAction(context: ActionContext<AgentStore & UserStore & TaskStore & KvStore>) {
  /**
   * Agent `name`'s budget with today's spending, for its API key or its owner's wallet proof of the request (`request`,
   * null where none can be made); 404 budget_not_found when its owner set none.
   */
  return async function readBudget(
    name: string,
    apiKey: string | undefined,
    request: ProvedRequest | null = null,
  ): Promise<BudgetView> {
    const agent = await agentOrOwner(context, name, apiKey, request)
    const budget = budgetFromJson(await context.store.kvGet(budgetKey(agent.name)))
    if (!budget)
      throw new NotFoundError(
        'budget_not_found',
        `"${agent.name}" has no spending budget; its owner sets one with PUT /api/agents/${agent.name}/budget.`,
      )
    return viewOf(context, budget, context.clock.now())
  }
}
