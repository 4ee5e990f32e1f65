import { nameKey } from '../../Agent.ts'
import {
  BUDGET_ISSUE_SKEW_MS,
  BudgetInput,
  type BudgetRecord,
  type BudgetView,
  budgetDay,
  budgetFromJson,
  budgetKey,
  budgetRecordOf,
  budgetToJson,
  budgetTypedData,
  MAX_BUDGET_LIFETIME_MS,
  signedBudgetOf,
  toBudgetView,
} from '../../Budget.ts'
import { ConflictError, InvalidInputError, UnauthorizedError } from '../../errors.ts'
import { signedByWallet } from '../../MarketTypedData.ts'
import type { AgentStore, KvStore, TaskStore, UserStore } from '../../ports/Store.ts'
import { parseInput } from '../../Validation.ts'
import { type ActionContext, requireAgent } from '../context.ts'
import { ownerWallets } from '../tasks/jobSteps.ts'

/** 400 naming one field of the budget and what to send instead. */
const fieldProblem = (field: string, detail: string) =>
  new InvalidInputError('invalid_body', `The request body is invalid: /budget/${field} ${detail}.`, [
    { pointer: `/budget/${field}`, detail },
  ])

/** Refuses a budget whose times make no sense at `now`: already expired, too far ahead, issued in the future. */
function checkTimes(budget: BudgetInput['budget'], now: Date): void {
  if (budget.expires_at <= now) throw fieldProblem('expires_at', 'must be in the future')
  if (budget.expires_at.getTime() - now.getTime() > MAX_BUDGET_LIFETIME_MS)
    throw fieldProblem('expires_at', 'must be at most 366 days ahead')
  if (budget.issued_at.getTime() > now.getTime() + BUDGET_ISSUE_SKEW_MS)
    throw fieldProblem('issued_at', "must not be ahead of the marketplace's clock (5 minutes allowed)")
  if (budget.issued_at >= budget.expires_at) throw fieldProblem('issued_at', 'must be before expires_at')
}

/** The `setBudget` action: an agent's owner sets what it may spend as a buyer. */
export function setBudgetAction(context: ActionContext<AgentStore & UserStore & TaskStore & KvStore>) {
  const { store, config, clock, chain } = context
  /**
   * Sets the spending budget of agent `name` from the body `{budget, signature}`: the owner's proven wallet's EIP-712
   * signature of SpendingBudget (Budget.ts), bound to this marketplace and agent. A budget replaces the one in effect
   * only when issued later (409 budget_superseded otherwise), so an older, looser budget can never be sent again.
   */
  return async function setBudget(name: string, body: unknown): Promise<BudgetView> {
    const input = parseInput(BudgetInput, body)
    const agent = await requireAgent(context, name)
    if (nameKey(input.budget.agent) !== nameKey(agent.name))
      throw fieldProblem('agent', `must be "${agent.name}", the agent in the path`)
    const now = clock.now()
    checkTimes(input.budget, now)
    const [owner] = await ownerWallets(context, agent)
    if (!owner)
      throw new ConflictError(
        'no_proven_owner',
        `"${agent.name}" has no owner with a proven wallet, so nobody can sign its budget: pair it with a wallet-signed pairing first.`,
      )
    const typed = budgetTypedData(config.chain.chainId, signedBudgetOf(config.baseUrl, input.budget))
    if (!(await signedByWallet(chain, owner, typed, input.signature)))
      throw new UnauthorizedError(
        `signature is not the EIP-712 signature, by the proven wallet of the agent's owner (user "${agent.ownerUsername}"), of SpendingBudget {market: "${config.baseUrl}", agent, perTaskMax, perDayMax (base units), sellers, expiresAt, issuedAt (Unix seconds)} under the domain {name: "agentmarket", version: "1", chainId: ${config.chain.chainId}} with this body's values.`,
        'invalid_signature',
        'Signature realm="agentmarket"',
      )
    const record = budgetRecordOf(input, owner)
    const kept = await store.kvUpdate(budgetKey(agent.name), (current) => {
      const existing = budgetFromJson(current)
      return existing && existing.issuedAt >= record.issuedAt
        ? { op: 'noop', result: false }
        : { op: 'set', value: budgetToJson(record), result: true }
    })
    if (!kept)
      throw new ConflictError(
        'budget_superseded',
        'A budget issued at the same time or later is in effect; sign this one with a later issued_at.',
      )
    return viewOf(context, record, now)
  }
}

/** The view of `budget` with its buyer's spending on the day of `now`. */
export async function viewOf(
  { store }: Pick<ActionContext<TaskStore>, 'store'>,
  budget: BudgetRecord,
  now: Date,
): Promise<BudgetView> {
  const { from, to } = budgetDay(now)
  return toBudgetView(budget, await store.budgetUsage(nameKey(budget.agent), from, to, now), now)
}
