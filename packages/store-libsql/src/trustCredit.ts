import { type JobCounts, TRUST_CREDIT_PER_BUYER, TRUST_CREDITED_METHODS } from '@agentmarket/core/rows'
import { sqliteSql, trustSql } from '@agentmarket/store-sql'
import { inArray, type SQL, sql } from 'drizzle-orm'
import { zeroAddress } from 'viem'
import { agents, tasks, trustBuyers, users } from './schema.ts'

const trust = trustSql(sqliteSql)

/** The SET list that sums an agent's trust counters again from its rows (store-sql trust.ts), in an UPDATE of agents. */
export const trustTotalsSet = (): SQL => trust.totalsSet

/** The agent's paid points from its credit counters (store-sql trust.ts), for `agents.paid_points`. */
export const PAID_POINTS: SQL = trust.paidPoints

/** 1 when the wallet `payer` is established toward the agent of the outer query (`agents`) at `at`. */
const establishedAt = (payer: SQL, at: number): SQL => trust.establishedAt(payer, 'agents', at)

/**
 * The statements that move a seller's trust rows for a job change, as Store.changeTask says, then sum its counters and
 * paid points again: with `counts.completed` the credit of the task's buyer wallet (the SQL form of `creditedBuyer`,
 * `cappedCredit` and `isEstablished`), with `counts.onTime` or `counts.late` the judged job on the row of the wallet
 * that paid it, with its standing at `at`. They run in the change's transaction before its compare-and-set and act
 * only while the task is still in one of `from`, that is exactly when that compare-and-set changes it.
 */
export function trustStatements(
  taskId: string,
  from: readonly string[],
  at: number,
  counts: JobCounts,
): SQL[] {
  const judged = counts.onTime || counts.late
  if (!counts.completed && !judged) return []
  const seller = sql`${agents.nameKey} = (select ${tasks.agentKey} from ${tasks} where ${tasks.id} = ${taskId}
      and ${inArray(tasks.status, [...from])})`
  return [
    ...(counts.completed ? [creditStatement(taskId, from, at)] : []),
    ...(judged ? [judgedJobStatement(taskId, from, at, counts)] : []),
    sql`update ${agents} set ${trustTotalsSet()} where ${seller}`,
    sql`update ${agents} set paid_points = ${PAID_POINTS} where ${seller}`,
  ]
}

/** The credit of a delivered task's buyer wallet to its seller at `at` (see trustStatements). */
function creditStatement(taskId: string, from: readonly string[], at: number): SQL {
  const payer = sql`lower(${tasks.paidFrom})`
  // A paid amount above 2^63 casts to the largest integer, which the cap then cuts.
  const amount = sql`cast(${tasks.paidAmountBaseUnits} as integer)`
  return sql`insert into ${trustBuyers} (agent_key, wallet, paid_base_units, established, first_paid_at)
    select ${tasks.agentKey}, ${payer}, min(${TRUST_CREDIT_PER_BUYER}, ${amount}), ${establishedAt(payer, at)}, ${at}
    from ${tasks} join ${agents} on ${agents.nameKey} = ${tasks.agentKey}
      left join ${users} on ${users.nameKey} = ${agents.ownerKey}
    where ${tasks.id} = ${taskId} and ${inArray(tasks.status, [...from])}
      and ${inArray(tasks.paymentMethod, [...TRUST_CREDITED_METHODS])}
      and ${tasks.paidFrom} is not null and ${amount} > 0
      and ${payer} not in (lower(coalesce(${tasks.payTo}, '')), lower(coalesce(${agents.walletAddress}, '')),
        lower(coalesce(${users.walletAddress}, '')), ${zeroAddress})
    on conflict (agent_key, wallet)
      do update set paid_base_units = min(${TRUST_CREDIT_PER_BUYER}, paid_base_units + excluded.paid_base_units),
        established = max(established, excluded.established),
        first_paid_at = coalesce(first_paid_at, excluded.first_paid_at)`
}

/** A judged job on the row of the wallet that paid it, with its standing at `at` (see trustStatements). */
function judgedJobStatement(taskId: string, from: readonly string[], at: number, counts: JobCounts): SQL {
  const payer = sql`lower(${tasks.paidFrom})`
  const onTime = counts.onTime ? 1 : 0
  const late = counts.late ? 1 : 0
  return sql`insert into ${trustBuyers} (agent_key, wallet, paid_base_units, established, on_time_jobs, late_jobs)
    select ${tasks.agentKey}, ${payer}, 0, ${establishedAt(payer, at)}, ${onTime}, ${late}
    from ${tasks} join ${agents} on ${agents.nameKey} = ${tasks.agentKey}
    where ${tasks.id} = ${taskId} and ${inArray(tasks.status, [...from])} and ${tasks.paidFrom} is not null
    on conflict (agent_key, wallet)
      do update set on_time_jobs = on_time_jobs + excluded.on_time_jobs, late_jobs = late_jobs + excluded.late_jobs,
        established = max(established, excluded.established)`
}
