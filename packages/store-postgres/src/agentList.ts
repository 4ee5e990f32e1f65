import type { AgentListQuery } from '@agentmarket/core'
import { agentFilters, likeLiteral } from '@agentmarket/store-sql'
import { and, ne, type SQL, sql } from 'drizzle-orm'
import { agents, tables } from './schema.ts'

// The list's filters and orders are written once (store-sql agentList.ts); what is PostgreSQL's own is the search.

/**
 * Agents whose name, bio or skill text holds `q`: `agent_search_text` (migration 0001) is the three, folded and
 * joined by U+001F, and its trigram index answers the LIKE for any q of three characters or more.
 */
function textSearch(q: string | undefined): SQL | undefined {
  if (!q) return undefined
  return sql`agent_search_text(${agents.name}, ${agents.bio}, ${agents.skillText}) like ${likeLiteral(q)}`
}

/** The condition of every filter of `query` (matchesFilters in SQL) on listed agents. */
export function agentListWhere(query: AgentListQuery): SQL | undefined {
  // A withdrawn listing is out of every list and search (sync returns it as a tombstone).
  return and(ne(agents.listing, 'deleted'), agentFilters(tables, query, textSearch))
}
