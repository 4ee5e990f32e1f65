import { type AgentListQuery, IDLE_WINDOW_MS, LIVE_WINDOW_MS } from '@agentmarket/core'
import { ON_TIME_PRIOR, RATING_PRIOR, SELF_MADE_POINTS, usernameKey } from '@agentmarket/core/rows'
import {
  and,
  asc,
  desc,
  eq,
  gte,
  isNotNull,
  isNull,
  lt,
  lte,
  ne,
  or,
  type SQL,
  type SQLWrapper,
  sql,
} from 'drizzle-orm'
import { agents } from './schema.ts'

/** Literal, case-insensitive substring match of any column: instr() treats % and _ as themselves. */
export function searchCondition(q: string | undefined, ...columns: SQLWrapper[]): SQL | undefined {
  if (!q) return undefined
  const matches = columns.map((column) => sql`instr(lower(coalesce(${column}, '')), lower(${q})) > 0`)
  return sql`(${sql.join(matches, sql` or `)})`
}

/** The shortest q the trigram index can answer; shorter ones read every agent. */
const TRIGRAM = 3

/** The match of `q` in the trigram index (migration 0018): the index and the phrase both lower-cased by lower(). */
const searchPhrase = (q: string) => sql`lower(${`"${q.replaceAll('"', '""')}"`})`

/** Whether the trigram index answers `q` (three characters or more); shorter ones read every agent. */
const indexed = (q: string | undefined): q is string => q !== undefined && [...q].length >= TRIGRAM

/**
 * Listed agents whose name, bio or skill text holds `q` (literal, ASCII-case-insensitive). From three characters on,
 * the trigram index (agent_search) answers alone: it holds the listed agents' texts lower-cased by lower() under a
 * case-sensitive tokenizer, so its phrase match is the exact test, and no agent is read to test it again.
 */
function textSearch(q: string | undefined, inOrder: boolean): SQL | undefined {
  if (!indexed(q)) return searchCondition(q, agents.name, agents.bio, agents.skillText)
  const rowid = inOrder ? sql`+${agents}.rowid` : sql`${agents}.rowid`
  return sql`${rowid} in (select rowid from agent_search where agent_search match ${searchPhrase(q)})`
}

/** From this many matches on, a page is read walking the order's index and testing each agent (see agentListWhere). */
export const WALK_IN_ORDER_FROM = 2_000

/**
 * The condition of every filter of `query` (matchesFilters in SQL) on listed agents; never seen counts as before any
 * instant. `inOrder` keeps SQLite from picking the agents by the search index or the heartbeat index (the unary +), so
 * it walks the order's index and stops at the page: when many agents match, that beats sorting them all (a page of
 * 42,000 idle agents: 8 ms against 200 ms); when few do, finding and sorting them is cheaper.
 */
export function agentListWhere(query: AgentListQuery, inOrder = false): SQL | undefined {
  // A withdrawn listing is out of every list and search (sync returns it as a tombstone).
  return and(ne(agents.listing, 'deleted'), agentFilters(query, inOrder))
}

/** The filters of `query` alone, withdrawn listings included (see agentListWhere). */
function agentFilters(query: AgentListQuery, inOrder: boolean): SQL | undefined {
  const { q, sells, maxPriceBaseUnits, lastSeen: seen, owner } = query
  const lastSeen = inOrder ? sql`+${agents.lastSeen}` : sql`${agents.lastSeen}`
  return and(
    textSearch(q, inOrder),
    sells === 'free' ? eq(agents.sellsFree, 1) : undefined,
    sells === 'paid' ? isNotNull(agents.cheapestPriceBaseUnits) : undefined,
    maxPriceBaseUnits === undefined
      ? undefined
      : lte(agents.cheapestPriceBaseUnits, Number(maxPriceBaseUnits)),
    seen?.from ? gte(lastSeen, seen.from.getTime()) : undefined,
    seen?.before ? or(isNull(lastSeen), lt(lastSeen, seen.before.getTime())) : undefined,
    owner ? eq(agents.ownerKey, usernameKey(owner)) : undefined,
  )
}

/**
 * How many agents `query` lists. With q of three characters or more the index holds listed agents only, so the
 * filters' count is the list's: q alone is counted in the index without reading an agent (10,000 matches at 100,000
 * agents: 3.1 ms, against 16.7 ms reading each). Otherwise: the agents the filters match less the withdrawn ones among
 * them, since a count that names the listing reads every agent (13 ms at 100,000), where each of these two is answered
 * from an index (the filters' own, then agents_withdrawn, which the unary + of `inOrder` leaves SQLite to pick).
 */
export function agentListCount(query: AgentListQuery): SQL {
  const { q, ...others } = query
  const filters = agentFilters(query, false)
  if (indexed(q))
    return agentFilters(others, false) === undefined
      ? sql`(select count(*) from agent_search where agent_search match ${searchPhrase(q)})`
      : sql`(select count(*) from ${agents} where ${filters})`
  // No filter: SQLite counts the table without reading its rows.
  const matching = filters
    ? sql`select count(*) from ${agents} where ${filters}`
    : sql`select count(*) from ${agents}`
  const withdrawn = and(eq(agents.listing, 'deleted'), agentFilters(query, true))
  return sql`((${matching}) - (select count(*) from ${agents} where ${withdrawn}))`
}

/** `points` when `condition` holds, else 0. */
const pointsIf = (condition: SQL, points: number) =>
  sql`(case when ${condition} then ${sql.raw(String(points))} else 0 end)`

/**
 * The trust score at `now` (trustScore in SQL). The paid points are the row's `paid_points`, written with the credit
 * counters (trustCredit.ts PAID_POINTS): the paid curve's 70 steps once per credited payment, not per row sorted.
 */
function trustAt(now: Date): SQL {
  const points = SELF_MADE_POINTS
  const liveSince = now.getTime() - LIVE_WINDOW_MS
  const idleSince = now.getTime() - IDLE_WINDOW_MS
  const hasSkill = sql`(${agents.cheapestPriceBaseUnits} is not null or ${agents.sellsFree} = 1)`
  const milestones = sql`(${agents.verifiedMilestones} + ${agents.claimedMilestones}) * ${sql.raw(String(points.perMilestone))}`
  return sql`(${sql.raw(String(points.registered))}
    + ${pointsIf(sql`coalesce(${agents.bio}, '') <> '' and ${hasSkill}`, points.profile)}
    + ${pointsIf(sql`coalesce(${agents.walletAddress}, '') <> ''`, points.wallet)}
    + ${pointsIf(sql`coalesce(${agents.ownerUsername}, '') <> '' and ${agents.ownerProven} = 1`, points.owner)}
    + min(${sql.raw(String(points.milestones))}, ${milestones})
    + (case when ${agents.lastSeen} >= ${liveSince} then ${sql.raw(String(points.presence.live))}
        when ${agents.lastSeen} >= ${idleSince} then ${sql.raw(String(points.presence.idle))} else 0 end)
    + ${kept(sql`${agents.paidPoints}`)})`
}

/** The paid points `paid` the agent's record keeps (keptPaidTrust in SQL: integer division rounds half up). */
function kept(paid: SQL): SQL {
  const reliable = sql`(${sql.raw(String(1000 * ON_TIME_PRIOR))} + ${agents.reliabilityVotes})`
  const voters = sql`(${sql.raw(String(1000 * ON_TIME_PRIOR))} + ${agents.reliabilityWeight})`
  const numerator = sql`(${paid} * ${reliable} * (${sql.raw(String(1000 * RATING_PRIOR))} + ${agents.ratingVotes}))`
  const denominator = sql`(${voters} * (${sql.raw(String(1000 * RATING_PRIOR))} + ${agents.ratingWeight}))`
  return sql`((2 * ${numerator} + ${denominator}) / (2 * ${denominator}))`
}

/** The ORDER BY of `query`'s order (compareAgents in SQL): its key, then most recently active, then name key. */
export function agentListOrder(query: AgentListQuery): SQL[] {
  const tieBreak = [desc(agents.lastActiveAt), asc(agents.nameKey)]
  if (query.sort === 'trust') return [sql`${trustAt(query.now)} desc`, ...tieBreak]
  if (query.sort === 'price')
    return [sql`${agents.cheapestPriceBaseUnits} is null`, asc(agents.cheapestPriceBaseUnits), ...tieBreak]
  if (query.sort === 'new') return [desc(agents.createdAt), asc(agents.nameKey)]
  return tieBreak
}
