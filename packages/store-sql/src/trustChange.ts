import { type JobCounts, TRUST_CREDIT_PER_BUYER, TRUST_CREDITED_METHODS } from '@agentmarket/core/rows'
import { inArray, type SQL, sql } from 'drizzle-orm'
import { zeroAddress } from 'viem'
import type { SqlDialect } from './dialect.ts'
import type { Tables } from './executor.ts'
import { trustSql } from './trust.ts'

/** What moves a seller's trust rows for one job change (Store.changeTask). */
export type TrustChange = {
  taskId: string
  /** The change's time, for the paying wallet's standing. */
  at: number
  counts: JobCounts
  /**
   * A condition on the task the statements act only while it holds: store-libsql runs them before the job's
   * compare-and-set and passes `status in (from)`, so they act exactly when that compare-and-set changes the task;
   * store-postgres runs them after it, on the locked seller row, and passes none.
   */
  gate?: SQL | undefined
}

/**
 * The statements that move a seller's trust rows for a job change, as Store.changeTask says, then sum its counters and
 * paid points again (store-sql trust.ts): with `counts.completed` the credit of the task's buyer wallet (the SQL form
 * of `creditedBuyer`, `cappedCredit` and `isEstablished`), with `counts.onTime` or `counts.late` the judged job on the
 * row of the wallet that paid it, with its standing at `at`. Each store runs them in order in the change's transaction.
 */
export function trustChangeStatements(dialect: SqlDialect, tables: Tables, change: TrustChange): SQL[] {
  const { counts } = change
  const judged = counts.onTime || counts.late
  if (!counts.completed && !judged) return []
  const { agents, tasks } = tables
  const trust = trustSql(dialect)
  const seller = sql`${agents.nameKey} = (select ${tasks.agentKey} from ${tasks} where ${tasks.id} = ${change.taskId}${gated(change.gate)})`
  return [
    ...(counts.completed ? [creditStatement(dialect, tables, change)] : []),
    ...(judged ? [judgedJobStatement(dialect, tables, change)] : []),
    sql`update ${agents} set ${trust.totalsSet} where ${seller}`,
    sql`update ${agents} set paid_points = ${trust.paidPoints} where ${seller}`,
  ]
}

/** ` and gate`, or nothing. */
const gated = (gate: SQL | undefined): SQL => (gate ? sql` and ${gate}` : sql``)

/** The credit of a delivered task's buyer wallet to its seller at `at` (see trustChangeStatements). */
function creditStatement(
  dialect: SqlDialect,
  { tasks, agents, users, trustBuyers }: Tables,
  change: TrustChange,
): SQL {
  const payer = sql`lower(${tasks.paidFrom})`
  const cap = sql.raw(TRUST_CREDIT_PER_BUYER.toString())
  // A paid amount above 2^63: SQLite casts it to the largest integer, PostgreSQL compares it as a numeric; the cap
  // then cuts it.
  const amount =
    dialect.name === 'sqlite'
      ? sql`cast(${tasks.paidAmountBaseUnits} as integer)`
      : sql`${tasks.paidAmountBaseUnits}::numeric`
  const established = trustSql(dialect).establishedAt(payer, 'agents', change.at)
  return sql`insert into ${trustBuyers} (agent_key, wallet, paid_base_units, established, first_paid_at)
    select ${tasks.agentKey}, ${payer}, cast(${dialect.least(cap, amount)} as bigint), ${established},
      ${dialect.long(change.at)}
    from ${tasks} join ${agents} on ${agents.nameKey} = ${tasks.agentKey}
      left join ${users} on ${users.nameKey} = ${agents.ownerKey}
    where ${tasks.id} = ${change.taskId}${gated(change.gate)}
      and ${inArray(tasks.paymentMethod, [...TRUST_CREDITED_METHODS])}
      and ${tasks.paidFrom} is not null and ${amount} > 0
      and ${payer} not in (lower(coalesce(${tasks.payTo}, '')), lower(coalesce(${agents.walletAddress}, '')),
        lower(coalesce(${users.walletAddress}, '')), ${zeroAddress})
    on conflict (agent_key, wallet)
      do update set paid_base_units = ${dialect.least(cap, sql.raw('trust_buyers.paid_base_units + excluded.paid_base_units'))},
        established = ${dialect.greatest(sql.raw('trust_buyers.established'), sql.raw('excluded.established'))},
        first_paid_at = coalesce(trust_buyers.first_paid_at, excluded.first_paid_at)`
}

/** A judged job on the row of the wallet that paid it, with its standing at `at` (see trustChangeStatements). */
function judgedJobStatement(
  dialect: SqlDialect,
  { tasks, agents, trustBuyers }: Tables,
  change: TrustChange,
): SQL {
  const payer = sql`lower(${tasks.paidFrom})`
  const onTime = dialect.int(change.counts.onTime ? 1 : 0)
  const late = dialect.int(change.counts.late ? 1 : 0)
  const established = trustSql(dialect).establishedAt(payer, 'agents', change.at)
  return sql`insert into ${trustBuyers} (agent_key, wallet, paid_base_units, established, on_time_jobs, late_jobs)
    select ${tasks.agentKey}, ${payer}, 0, ${established}, ${onTime}, ${late}
    from ${tasks} join ${agents} on ${agents.nameKey} = ${tasks.agentKey}
    where ${tasks.id} = ${change.taskId}${gated(change.gate)} and ${tasks.paidFrom} is not null
    on conflict (agent_key, wallet)
      do update set on_time_jobs = trust_buyers.on_time_jobs + excluded.on_time_jobs,
        late_jobs = trust_buyers.late_jobs + excluded.late_jobs,
        established = ${dialect.greatest(sql.raw('trust_buyers.established'), sql.raw('excluded.established'))}`
}
