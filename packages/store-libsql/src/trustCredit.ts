import { TRUST_CREDIT_PER_BUYER, TRUST_CREDITED_METHODS } from '@agentmarket/core'
import { inArray, sql } from 'drizzle-orm'
import { zeroAddress } from 'viem'
import { agents, tasks, trustBuyers, users } from './schema.ts'

/**
 * The statements that credit a delivered task's buyer wallet to its seller's trust, as Store.changeTask says (the SQL
 * form of `creditedBuyer` and `cappedCredit`). They run in the completion's transaction before its compare-and-set
 * and act only while the task is still in one of `from`, that is exactly when that compare-and-set completes it.
 */
export function trustCreditStatements(taskId: string, from: readonly string[]) {
  const payer = sql`lower(${tasks.paidFrom})`
  // A paid amount above 2^63 casts to the largest integer, which the cap then cuts.
  const amount = sql`cast(${tasks.paidAmountBaseUnits} as integer)`
  const credit = sql`insert into ${trustBuyers} (agent_key, wallet, paid_base_units)
    select ${tasks.agentKey}, ${payer}, min(${TRUST_CREDIT_PER_BUYER}, ${amount})
    from ${tasks} join ${agents} on ${agents.nameKey} = ${tasks.agentKey}
      left join ${users} on ${users.nameKey} = ${agents.ownerKey}
    where ${tasks.id} = ${taskId} and ${inArray(tasks.status, [...from])}
      and ${inArray(tasks.paymentMethod, [...TRUST_CREDITED_METHODS])}
      and ${tasks.paidFrom} is not null and ${amount} > 0
      and ${payer} not in (lower(coalesce(${tasks.payTo}, '')), lower(coalesce(${agents.walletAddress}, '')),
        lower(coalesce(${users.walletAddress}, '')), ${zeroAddress})
    on conflict (agent_key, wallet)
      do update set paid_base_units = min(${TRUST_CREDIT_PER_BUYER}, paid_base_units + excluded.paid_base_units)`
  const ofAgent = sql`from ${trustBuyers} where ${trustBuyers.agentKey} = ${agents.nameKey}`
  const totals = sql`update ${agents} set
      trust_credit_base_units = (select coalesce(sum(${trustBuyers.paidBaseUnits}), 0) ${ofAgent}),
      paying_buyers = (select count(*) ${ofAgent} and ${trustBuyers.paidBaseUnits} > 0)
    where ${agents.nameKey} = (select ${tasks.agentKey} from ${tasks} where ${tasks.id} = ${taskId}
      and ${inArray(tasks.status, [...from])})`
  return [credit, totals]
}
