import { type AgentListQuery, IDLE_WINDOW_MS, LIVE_WINDOW_MS } from '@agentmarket/core'
import { ON_TIME_PRIOR, RATING_PRIOR, SELF_MADE_POINTS, usernameKey } from '@agentmarket/core/rows'
import { and, asc, desc, eq, gte, isNotNull, isNull, lt, lte, ne, or, type SQL, sql } from 'drizzle-orm'
import { agents } from './schema.ts'

// The agent list's filters and orders in PostgreSQL: the same meanings as store-libsql's agentList.ts (and the core's
// matchesFilters and compareAgents), in PostgreSQL's functions (greatest/least, strpos).

/** `text` with ASCII letters lower-cased, as the core compares q (AgentSearch.ts). */
const foldAscii = (text: SQL) =>
  sql`translate(${text}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')`

/** `q` for LIKE: its own `\`, `%` and `_` escaped, so it matches literally. */
const likeLiteral = (q: string) =>
  `%${q.replace(/[A-Z]/g, (letter) => letter.toLowerCase()).replace(/[\\%_]/g, '\\$&')}%`

/** Literal, case-insensitive (ASCII) substring match of any of the columns. */
export function searchCondition(q: string | undefined, ...columns: SQL[]): SQL | undefined {
  if (!q) return undefined
  const pattern = likeLiteral(q)
  return sql`(${sql.join(
    columns.map((column) => sql`${foldAscii(sql`coalesce(${column}, '')`)} like ${pattern}`),
    sql` or `,
  )})`
}

/**
 * Agents whose name, bio or skill text holds `q`: `agent_search_text` (migration 0001) is the three, folded and
 * joined by U+001F, and its trigram index answers the LIKE for any q of three characters or more.
 */
function textSearch(q: string | undefined): SQL | undefined {
  if (!q) return undefined
  return sql`agent_search_text(${agents.name}, ${agents.bio}, ${agents.skillText}) like ${likeLiteral(q)}`
}

/** The condition of every filter of `query` (matchesFilters in SQL); never seen counts as before any instant. */
export function agentListWhere(query: AgentListQuery): SQL | undefined {
  const { q, sells, maxPriceBaseUnits, lastSeen: seen, owner } = query
  return and(
    // A withdrawn listing is out of every list and search (sync returns it as a tombstone).
    ne(agents.listing, 'deleted'),
    textSearch(q),
    sells === 'free' ? eq(agents.sellsFree, 1) : undefined,
    sells === 'paid' ? isNotNull(agents.cheapestPriceBaseUnits) : undefined,
    maxPriceBaseUnits === undefined
      ? undefined
      : lte(agents.cheapestPriceBaseUnits, Number(maxPriceBaseUnits)),
    seen?.from ? gte(agents.lastSeen, seen.from.getTime()) : undefined,
    seen?.before ? or(isNull(agents.lastSeen), lt(agents.lastSeen, seen.before.getTime())) : undefined,
    owner ? eq(agents.ownerKey, usernameKey(owner)) : undefined,
  )
}

/** `points` when `condition` holds, else 0. */
const pointsIf = (condition: SQL, points: number) =>
  sql`(case when ${condition} then ${sql.raw(String(points))} else 0 end)`

/**
 * The trust score at `now` (trustScore in SQL), as store-libsql's: the paid points are the row's `paid_points`, written
 * with the credit counters (taskStore.ts PAID_POINTS).
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
    + least(${sql.raw(String(points.milestones))}, ${milestones})
    + (case when ${agents.lastSeen} >= ${liveSince} then ${sql.raw(String(points.presence.live))}
        when ${agents.lastSeen} >= ${idleSince} then ${sql.raw(String(points.presence.idle))} else 0 end)
    + ${kept(sql`${agents.paidPoints}`)})`
}

/** The paid points `paid` the agent's record keeps (keptPaidTrust in SQL, in bigint: integer division rounds half up). */
function kept(paid: SQL): SQL {
  const reliable = sql`(${sql.raw(String(1000 * ON_TIME_PRIOR))} + ${agents.reliabilityVotes}::bigint)`
  const voters = sql`(${sql.raw(String(1000 * ON_TIME_PRIOR))} + ${agents.reliabilityWeight}::bigint)`
  const numerator = sql`(${paid}::bigint * ${reliable} * (${sql.raw(String(1000 * RATING_PRIOR))} + ${agents.ratingVotes}))`
  const denominator = sql`(${voters} * (${sql.raw(String(1000 * RATING_PRIOR))} + ${agents.ratingWeight}))`
  return sql`((2 * ${numerator} + ${denominator}) / (2 * ${denominator}))`
}

/** The ORDER BY of `query`'s order (compareAgents in SQL): its key, then most recently active, then name key. */
export function agentListOrder(query: AgentListQuery): SQL[] {
  const tieBreak = [desc(agents.lastActiveAt), asc(agents.nameKey)]
  if (query.sort === 'trust') return [sql`${trustAt(query.now)} desc`, ...tieBreak]
  if (query.sort === 'price')
    return [sql`(${agents.cheapestPriceBaseUnits} is null)`, asc(agents.cheapestPriceBaseUnits), ...tieBreak]
  if (query.sort === 'new') return [desc(agents.createdAt), asc(agents.nameKey)]
  return tieBreak
}
