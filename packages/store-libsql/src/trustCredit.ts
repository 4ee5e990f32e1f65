import {
  type JobCounts,
  PAID_TRUST_STEPS,
  POINTS_PER_BUYER,
  STANDING_AGE_MS,
  STANDING_ELSEWHERE_BASE_UNITS,
  TRUST_CREDIT_PER_BUYER,
  TRUST_CREDITED_METHODS,
} from '@agentmarket/core/rows'
import { inArray, type SQL, sql } from 'drizzle-orm'
import { zeroAddress } from 'viem'
import { agents, tasks, trustBuyers, users } from './schema.ts'

/** A row's vote weight in thousandths (Trust.ts voteWeight), of `trust_buyers` aliased `b`. */
const WEIGHT = sql.raw(`min(1000, b.paid_base_units / ${(TRUST_CREDIT_PER_BUYER / 1000n).toString()})`)
/** A row's vote in thousandths (Trust.ts ratingVote), of `trust_buyers` aliased `b`. */
const VOTE = sql.raw('((2000 * (b.rating_sum - b.rating_count) + 4 * b.rating_count) / (8 * b.rating_count))')

/** The SET list that sums an agent's trust counters again from its rows (Trust.ts trustTotals), in an UPDATE of agents. */
export function trustTotalsSet(): SQL {
  const of = sql`from ${trustBuyers} b where b.agent_key = ${agents.nameKey}`
  return sql`trust_credit_base_units = (select coalesce(sum(b.paid_base_units), 0) ${of}),
      paying_buyers = (select count(*) ${of} and b.paid_base_units > 0),
      established_credit_base_units = (select coalesce(sum(b.paid_base_units), 0) ${of} and b.established = 1),
      established_buyers = (select count(*) ${of} and b.established = 1 and b.paid_base_units > 0),
      rated_buyers = (select count(*) ${of} and b.rating_count > 0),
      rating_votes = (select coalesce(sum(${VOTE} * ${WEIGHT} / 1000), 0) ${of} and b.rating_count > 0),
      rating_weight = (select coalesce(sum(${WEIGHT}), 0) ${of} and b.rating_count > 0),
      ${reliabilitySet(of)}`
}

/**
 * The SET items of the on-time votes (Trust.ts trustTotals): one per established row with judged jobs, and one for the
 * other rows' jobs together. `of` selects the agent's rows (`b`); shared by the migration that fills them.
 */
export function reliabilitySet(of: SQL): SQL {
  const judged = sql.raw('b.on_time_jobs + b.late_jobs > 0')
  return sql`reliability_votes = (select coalesce(sum(1000 * b.on_time_jobs / (b.on_time_jobs + b.late_jobs)), 0)
        ${of} and b.established = 1 and ${judged})
        + (select coalesce(1000 * sum(b.on_time_jobs) / sum(b.on_time_jobs + b.late_jobs), 0)
        ${of} and b.established = 0 and ${judged}),
      reliability_weight = 1000 * ((select count(*) ${of} and b.established = 1 and ${judged})
        + (select count(*) > 0 ${of} and b.established = 0 and ${judged}))`
}

/**
 * The credit the paid curve reads (Trust.ts countedPaidTrust): established buyers' credit, plus the other wallets'
 * together up to one buyer's cap; and the buyers it counts: the established ones, plus one for all the others.
 */
const COUNTED_CREDIT = `(established_credit_base_units + min(${TRUST_CREDIT_PER_BUYER.toString()}, trust_credit_base_units - established_credit_base_units))`
const COUNTED_BUYERS = '(established_buyers + (trust_credit_base_units > established_credit_base_units))'

/**
 * The agent's paid points from its credit counters (Trust.ts countedPaidTrust), for `agents.paid_points`: the steps of
 * the curve at or below the counted credit (PAID_TRUST_STEPS; SQLite has no pow), at most 10 per counted buyer. It
 * reads the counters as the row holds them, so it runs in a statement after the one that sums them.
 */
export const PAID_POINTS: SQL = sql.raw(
  `min(${POINTS_PER_BUYER} * ${COUNTED_BUYERS}, ${PAID_TRUST_STEPS.map((step) => `(${COUNTED_CREDIT} >= ${step.toString()})`).join(' + ')})`,
)

/**
 * 1 when the wallet `payer` is established toward the agent of the outer query (`agents`) at `at` (Trust.ts
 * isEstablished): its credit at agents unconnected to that one (another agent, not the same owner, not the same
 * wallet) reaches STANDING_ELSEWHERE_BASE_UNITS and its first credit anywhere is STANDING_AGE_MS old.
 */
function establishedAt(payer: SQL, at: number): SQL {
  const unconnected = sql`s.name_key <> ${agents.nameKey}
    and (${agents.ownerKey} is null or s.owner_key is null or s.owner_key <> ${agents.ownerKey})
    and (coalesce(${agents.walletAddress}, '') = '' or s.wallet_address is null
      or lower(s.wallet_address) <> lower(${agents.walletAddress}))`
  const elsewhere = sql`(select coalesce(sum(h.paid_base_units), 0) from ${trustBuyers} h
    join ${agents} s on s.name_key = h.agent_key where h.wallet = ${payer} and ${unconnected})`
  const first = sql`(select min(h.first_paid_at) from ${trustBuyers} h where h.wallet = ${payer})`
  return sql`(case when ${elsewhere} >= ${STANDING_ELSEWHERE_BASE_UNITS}
    and ${first} <= ${at - STANDING_AGE_MS} then 1 else 0 end)`
}

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
