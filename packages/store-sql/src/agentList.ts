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
  or,
  type SQL,
  type SQLWrapper,
  sql,
} from 'drizzle-orm'
import type { SqlDialect } from './dialect.ts'
import type { Tables } from './executor.ts'

// The agent list's filters and orders (the core's matchesFilters and compareAgents in SQL), written once. What each
// store searches with is its own (store-libsql: an FTS5 trigram table; store-postgres: a pg_trgm index over a
// function), so the text search is handed in; the rest differs only in the dialect's words (min/least, casts).

/** `text` with ASCII letters lower-cased, as the core compares q (AgentSearch.ts). */
const foldAscii = (text: SQL) =>
  sql`translate(${text}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')`

/** `q` for LIKE: its own `\`, `%` and `_` escaped, so it matches literally. */
export const likeLiteral = (q: string) =>
  `%${q.replace(/[A-Z]/g, (letter) => letter.toLowerCase()).replace(/[\\%_]/g, '\\$&')}%`

/**
 * Literal, case-insensitive (ASCII) substring match of any of the columns: SQLite's instr() treats % and _ as
 * themselves; PostgreSQL's LIKE is given q escaped.
 */
export function searchCondition(
  dialect: SqlDialect,
  q: string | undefined,
  ...columns: SQLWrapper[]
): SQL | undefined {
  if (!q) return undefined
  const pattern = likeLiteral(q)
  const matches = columns.map((column) =>
    dialect.name === 'sqlite'
      ? sql`instr(lower(coalesce(${column}, '')), lower(${q})) > 0`
      : sql`${foldAscii(sql`coalesce(${column}, '')`)} like ${pattern}`,
  )
  return sql`(${sql.join(matches, sql` or `)})`
}

/** How a store finds the agents whose text holds q (its search index), or undefined for no q. */
export type TextSearch = (q: string | undefined) => SQL | undefined

/**
 * The condition of every filter of `query` but the listing (matchesFilters in SQL); never seen counts as before any
 * instant. `lastSeen` is the column as the store wants it read (store-libsql's unary + keeps SQLite off its index).
 */
export function agentFilters(
  { agents }: Tables,
  query: AgentListQuery,
  textSearch: TextSearch,
  lastSeen: SQLWrapper = agents.lastSeen,
): SQL | undefined {
  const { q, sells, maxPriceBaseUnits, lastSeen: seen, owner } = query
  return and(
    textSearch(q),
    sells === 'free' ? eq(agents.sellsFree, 1) : undefined,
    sells === 'paid' ? isNotNull(agents.cheapestPriceBaseUnits) : undefined,
    maxPriceBaseUnits === undefined
      ? undefined
      : lte(agents.cheapestPriceBaseUnits, Number(maxPriceBaseUnits)),
    seen?.from ? gte(lastSeen as SQL, seen.from.getTime()) : undefined,
    seen?.before ? or(isNull(lastSeen), lt(lastSeen as SQL, seen.before.getTime())) : undefined,
    owner ? eq(agents.ownerKey, usernameKey(owner)) : undefined,
  )
}

/** `points` when `condition` holds, else 0. */
const pointsIf = (condition: SQL, points: number) =>
  sql`(case when ${condition} then ${sql.raw(String(points))} else 0 end)`

/**
 * The trust score at `now` (trustScore in SQL). The paid points are the row's `paid_points`, written with the credit
 * counters (trustCredit.ts paidPoints): the paid curve's 70 steps once per credited payment, not per row sorted.
 */
function trustAt(dialect: SqlDialect, { agents }: Tables, now: Date): SQL {
  const points = SELF_MADE_POINTS
  const liveSince = now.getTime() - LIVE_WINDOW_MS
  const idleSince = now.getTime() - IDLE_WINDOW_MS
  const hasSkill = sql`(${agents.cheapestPriceBaseUnits} is not null or ${agents.sellsFree} = 1)`
  const milestones = sql`(${agents.verifiedMilestones} + ${agents.claimedMilestones}) * ${sql.raw(String(points.perMilestone))}`
  return sql`(${sql.raw(String(points.registered))}
    + ${pointsIf(sql`coalesce(${agents.bio}, '') <> '' and ${hasSkill}`, points.profile)}
    + ${pointsIf(sql`coalesce(${agents.walletAddress}, '') <> ''`, points.wallet)}
    + ${pointsIf(sql`coalesce(${agents.ownerUsername}, '') <> '' and ${agents.ownerProven} = 1`, points.owner)}
    + ${dialect.least(sql.raw(String(points.milestones)), milestones)}
    + (case when ${agents.lastSeen} >= ${liveSince} then ${sql.raw(String(points.presence.live))}
        when ${agents.lastSeen} >= ${idleSince} then ${sql.raw(String(points.presence.idle))} else 0 end)
    + ${kept(dialect, agents, sql`${agents.paidPoints}`)})`
}

/** The paid points `paid` the agent's record keeps (keptPaidTrust in SQL, in 64 bits: integer division rounds half up). */
function kept(dialect: SqlDialect, agents: Tables['agents'], paid: SQL): SQL {
  const reliable = sql`(${sql.raw(String(1000 * ON_TIME_PRIOR))} + ${dialect.widened(agents.reliabilityVotes)})`
  const voters = sql`(${sql.raw(String(1000 * ON_TIME_PRIOR))} + ${dialect.widened(agents.reliabilityWeight)})`
  const numerator = sql`(${dialect.widened(paid)} * ${reliable} * (${sql.raw(String(1000 * RATING_PRIOR))} + ${agents.ratingVotes}))`
  const denominator = sql`(${voters} * (${sql.raw(String(1000 * RATING_PRIOR))} + ${agents.ratingWeight}))`
  return sql`((2 * ${numerator} + ${denominator}) / (2 * ${denominator}))`
}

/** The ORDER BY of `query`'s order (compareAgents in SQL): its key, then most recently active, then name key. */
export function agentListOrder(dialect: SqlDialect, tables: Tables, query: AgentListQuery): SQL[] {
  const { agents } = tables
  const tieBreak = [desc(agents.lastActiveAt), asc(agents.nameKey)]
  if (query.sort === 'trust') return [sql`${trustAt(dialect, tables, query.now)} desc`, ...tieBreak]
  if (query.sort === 'price')
    return [sql`(${agents.cheapestPriceBaseUnits} is null)`, asc(agents.cheapestPriceBaseUnits), ...tieBreak]
  if (query.sort === 'new') return [desc(agents.createdAt), asc(agents.nameKey)]
  return tieBreak
}
