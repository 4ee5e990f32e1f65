import type { AgentListQuery } from '@agentmarket/core'
import { agentFilters, searchCondition, sqliteSql } from '@agentmarket/store-sql'
import { and, eq, ne, type SQL, sql } from 'drizzle-orm'
import { agents, tables } from './schema.ts'
import { INDEXED_THROUGH } from './searchIndex.ts'

// The list's filters and orders are written once (store-sql agentList.ts); what is SQLite's own is here: the FTS5
// trigram search with its unindexed tail, the walk in the order's index, and the count from two indexes.

/** The shortest q the trigram index can answer; shorter ones read every agent. */
const TRIGRAM = 3

/** The match of `q` in the trigram index (migration 0018): the index and the phrase both lower-cased by lower(). */
const searchPhrase = (q: string) => sql`lower(${`"${q.replaceAll('"', '""')}"`})`

/** Whether the trigram index answers `q` (three characters or more); shorter ones read every agent. */
const indexed = (q: string | undefined): q is string => q !== undefined && [...q].length >= TRIGRAM

/** The literal test of `q` on each agent's texts: short queries, and the tail the index does not hold yet. */
const literalSearch = (q: string | undefined) =>
  searchCondition(sqliteSql, q, agents.name, agents.bio, agents.skillText)

/**
 * The listed agents past the search index's watermark (searchIndex.ts), newest registrations, that hold `q`: listed
 * as the index's own are, so a count of the filters stays the list's.
 */
const inTail = (rowid: SQL, q: string) =>
  sql`(${rowid} > ${sql.raw(INDEXED_THROUGH)} and ${ne(agents.listing, 'deleted')} and ${literalSearch(q)})`

/**
 * Listed agents whose name, bio or skill text holds `q` (literal, ASCII-case-insensitive). From three characters on,
 * the trigram index (agent_search) answers for the agents it holds: their texts lower-cased by lower() under a
 * case-sensitive tokenizer, so its phrase match is the exact test, and none of them is read to test it again. The
 * tail it does not hold yet (agents registered since the last pass, searchIndex.ts) is read and tested, so an agent
 * is found the moment its registration is answered.
 */
const textSearch =
  (inOrder: boolean) =>
  (q: string | undefined): SQL | undefined => {
    if (!indexed(q)) return literalSearch(q)
    const rowid = inOrder ? sql`+${agents}.rowid` : sql`${agents}.rowid`
    // One list of rowids, not an OR of two tests: SQLite then looks the agents up by it instead of reading them all.
    return sql`${rowid} in (select rowid from agent_search where agent_search match ${searchPhrase(q)}
      union all select rowid from ${agents} where ${inTail(sql`${agents}.rowid`, q)})`
  }

/** From this many matches on, a page is read walking the order's index and testing each agent (see agentListWhere). */
export const WALK_IN_ORDER_FROM = 2_000

/**
 * The condition of every filter of `query` (matchesFilters in SQL) on listed agents. `inOrder` keeps SQLite from
 * picking the agents by the search index or the heartbeat index (the unary +), so it walks the order's index and stops
 * at the page: when many agents match, that beats sorting them all (a page of 42,000 idle agents: 8 ms against
 * 200 ms); when few do, finding and sorting them is cheaper.
 */
export function agentListWhere(query: AgentListQuery, inOrder = false): SQL | undefined {
  // A withdrawn listing is out of every list and search (sync returns it as a tombstone).
  return and(ne(agents.listing, 'deleted'), filtersOf(query, inOrder))
}

/** The filters of `query` alone, withdrawn listings included (see agentListWhere). */
const filtersOf = (query: AgentListQuery, inOrder: boolean) =>
  agentFilters(
    tables,
    query,
    textSearch(inOrder),
    inOrder ? sql`+${agents.lastSeen}` : sql`${agents.lastSeen}`,
  )

/**
 * How many agents `query` lists. With q of three characters or more the index holds listed agents only, so the
 * filters' count is the list's: q alone is counted in the index without reading an agent (10,000 matches at 100,000
 * agents: 3.1 ms, against 16.7 ms reading each), plus the listed agents of the unindexed tail that hold it. Otherwise: the agents the filters match less the withdrawn ones among
 * them, since a count that names the listing reads every agent (13 ms at 100,000), where each of these two is answered
 * from an index (the filters' own, then agents_withdrawn, which the unary + of `inOrder` leaves SQLite to pick).
 */
export function agentListCount(query: AgentListQuery): SQL {
  const { q, ...others } = query
  const filters = filtersOf(query, false)
  if (indexed(q))
    return filtersOf(others, false) === undefined
      ? sql`((select count(*) from agent_search where agent_search match ${searchPhrase(q)})
          + (select count(*) from ${agents} where ${inTail(sql`${agents}.rowid`, q)}))`
      : sql`(select count(*) from ${agents} where ${filters})`
  // No filter: SQLite counts the table without reading its rows.
  const matching = filters
    ? sql`select count(*) from ${agents} where ${filters}`
    : sql`select count(*) from ${agents}`
  const withdrawn = and(eq(agents.listing, 'deleted'), filtersOf(query, true))
  return sql`((${matching}) - (select count(*) from ${agents} where ${withdrawn}))`
}
