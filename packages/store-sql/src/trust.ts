import {
  PAID_TRUST_STEPS,
  POINTS_PER_BUYER,
  STANDING_AGE_MS,
  STANDING_ELSEWHERE_BASE_UNITS,
  TRUST_CREDIT_PER_BUYER,
} from '@agentmarket/core/rows'
import { type SQL, sql } from 'drizzle-orm'
import type { SqlDialect } from './dialect.ts'

// The trust score's counters in SQL (Trust.ts trustTotals, countedPaidTrust, isEstablished), written once: the two
// dialects differ in min/least, max/greatest and how a truth becomes 0 or 1. Each store runs them in its own write
// (store-libsql before a job change's compare-and-set, gated by it; store-postgres after it, on the locked row).

const raw = sql.raw

/** The rows of the agent the outer UPDATE of `agents` sets, aliased `b`. */
const OF_AGENT = raw('from trust_buyers b where b.agent_key = agents.name_key')

/**
 * The trust counters of a dialect.
 * @example sql`update agents set ${trustSql(sqliteSql).totalsSet} where name_key = ${key}`
 */
export function trustSql(dialect: SqlDialect) {
  /** A row's vote weight in thousandths (Trust.ts voteWeight), of `trust_buyers` aliased `b`. */
  const weight = dialect.least(
    raw('1000'),
    raw(`b.paid_base_units / ${(TRUST_CREDIT_PER_BUYER / 1000n).toString()}`),
  )
  /** A row's vote in thousandths (Trust.ts ratingVote), of `trust_buyers` aliased `b`. */
  const vote = raw('((2000 * (b.rating_sum - b.rating_count) + 4 * b.rating_count) / (8 * b.rating_count))')

  /**
   * The SET items of the on-time votes (Trust.ts trustTotals): one per established row with judged jobs, and one for
   * the other rows' jobs together. `of` selects the agent's rows (`b`).
   */
  const reliabilitySet = (of: SQL): SQL => {
    const judged = raw('b.on_time_jobs + b.late_jobs > 0')
    return sql`reliability_votes = (select coalesce(sum(1000 * b.on_time_jobs / (b.on_time_jobs + b.late_jobs)), 0)
        ${of} and b.established = 1 and ${judged})
        + (select coalesce(1000 * sum(b.on_time_jobs) / sum(b.on_time_jobs + b.late_jobs), 0)
        ${of} and b.established = 0 and ${judged}),
      reliability_weight = 1000 * ((select count(*) ${of} and b.established = 1 and ${judged})
        + (select ${dialect.oneIf(sql`count(*) > 0`)} ${of} and b.established = 0 and ${judged}))`
  }

  /**
   * The credit the paid curve reads (Trust.ts countedPaidTrust): established buyers' credit, plus the other wallets'
   * together up to one buyer's cap; and the buyers it counts: the established ones, plus one for all the others.
   */
  const countedCredit = sql`(established_credit_base_units + ${dialect.least(raw(TRUST_CREDIT_PER_BUYER.toString()), raw('trust_credit_base_units - established_credit_base_units'))})`
  const countedBuyers = sql`(established_buyers + ${dialect.oneIf(raw('trust_credit_base_units > established_credit_base_units'))})`

  return {
    /** The SET list that sums an agent's trust counters again from its rows (Trust.ts trustTotals), in an UPDATE of agents. */
    totalsSet: sql`trust_credit_base_units = (select coalesce(sum(b.paid_base_units), 0) ${OF_AGENT}),
      paying_buyers = (select count(*) ${OF_AGENT} and b.paid_base_units > 0),
      established_credit_base_units = (select coalesce(sum(b.paid_base_units), 0) ${OF_AGENT} and b.established = 1),
      established_buyers = (select count(*) ${OF_AGENT} and b.established = 1 and b.paid_base_units > 0),
      rated_buyers = (select count(*) ${OF_AGENT} and b.rating_count > 0),
      rating_votes = (select coalesce(sum(${vote} * ${weight} / 1000), 0) ${OF_AGENT} and b.rating_count > 0),
      rating_weight = (select coalesce(sum(${weight}), 0) ${OF_AGENT} and b.rating_count > 0),
      ${reliabilitySet(OF_AGENT)}`,

    reliabilitySet,

    /**
     * The agent's paid points from its credit counters (Trust.ts countedPaidTrust), for `agents.paid_points`: the
     * steps of the curve at or below the counted credit (PAID_TRUST_STEPS; SQLite has no pow), at most 10 per counted
     * buyer. It reads the counters as the row holds them, so it runs in a statement after the one that sums them.
     */
    paidPoints: dialect.least(
      sql`${raw(String(POINTS_PER_BUYER))} * ${countedBuyers}`,
      sql.join(
        PAID_TRUST_STEPS.map((step) => dialect.oneIf(sql`${countedCredit} >= ${raw(step.toString())}`)),
        sql` + `,
      ),
    ),

    /**
     * 1 when the wallet `payer` is established toward the agent row `agent` (its name in the outer query) at `at`
     * (Trust.ts isEstablished): its credit at agents unconnected to that one (another agent, not the same owner, not
     * the same wallet) reaches STANDING_ELSEWHERE_BASE_UNITS and its first credit anywhere is STANDING_AGE_MS old.
     */
    establishedAt(payer: SQL, agent: string, at: number): SQL {
      const a = (column: string) => raw(`${agent}.${column}`)
      const unconnected = sql`s.name_key <> ${a('name_key')}
        and (${a('owner_key')} is null or s.owner_key is null or s.owner_key <> ${a('owner_key')})
        and (coalesce(${a('wallet_address')}, '') = '' or s.wallet_address is null
          or lower(s.wallet_address) <> lower(${a('wallet_address')}))`
      const elsewhere = sql`(select coalesce(sum(h.paid_base_units), 0) from trust_buyers h
        join agents s on s.name_key = h.agent_key where h.wallet = ${payer} and ${unconnected})`
      const first = sql`(select min(h.first_paid_at) from trust_buyers h where h.wallet = ${payer})`
      return sql`(case when ${elsewhere} >= ${dialect.long(Number(STANDING_ELSEWHERE_BASE_UNITS))}
        and ${first} <= ${dialect.long(at - STANDING_AGE_MS)} then 1 else 0 end)`
    },
  }
}
