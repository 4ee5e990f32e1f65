import * as v from 'valibot'
import { nameKey } from '../../Agent.ts'
import {
  AgentSyncFields,
  decodeSyncCursor,
  encodeSyncCursor,
  SYNC_OVERLAP_MS,
  SYNC_PAGE,
} from '../../AgentSync.ts'
import { type AgentSummary, toAgentSummary } from '../../AgentView.ts'
import { InvalidInputError } from '../../errors.ts'
import type { AgentStore } from '../../ports/Store.ts'
import { pageNumber, parseInput, strictFields } from '../../Validation.ts'
import type { ActionContext } from '../context.ts'

/** The query of a sync of the agent list: where to resume or since when, and how many. */
const AgentSyncInput = strictFields({
  ...AgentSyncFields,
  limit: v.optional(pageNumber(1, SYNC_PAGE.max), SYNC_PAGE.default),
})

/** A withdrawn listing as sync shows it: its name, that it is gone, and since when. */
export type AgentTombstone = { name: string; listing: 'deleted'; updatedAt: string }

/** One page of a sync: agents by name (tombstones included), and where to go on. */
export type AgentSyncPage = {
  agents: (AgentSummary | AgentTombstone)[]
  limit: number
  /** The next page of this pass; null when this is the last. */
  next_cursor: string | null
  /** Where the next sync starts (updated_since): when this pass began, less SYNC_OVERLAP_MS. */
  next_updated_since: string
}

/** True when an agent list query asks for a sync (it names cursor or updated_since). */
export function isSyncQuery(query: unknown): boolean {
  return typeof query === 'object' && query !== null && ('cursor' in query || 'updated_since' in query)
}

/** The `syncAgents` action: incremental sync of the agent list for aggregators and catalogs. */
export function syncAgentsAction(context: ActionContext<AgentStore>) {
  const { store, clock, config } = context
  /**
   * One page of a sync pass. Agents come by name key, so a pass over the pages sees each once even while agents
   * change (no duplicate, no gap among those that existed when it began); deprecated listings carry their message,
   * deleted ones come as tombstones. `updated_since` keeps only agents changed since then; the last page's
   * `next_updated_since` starts the next sync, overlapping the last one by a minute so nothing is missed.
   */
  return async function syncAgents(query: unknown): Promise<AgentSyncPage> {
    const input = parseInput(AgentSyncInput, query ?? {}, 'invalid_query')
    if (input.cursor !== undefined && input.updated_since !== undefined)
      throw new InvalidInputError(
        'invalid_query',
        'The query is invalid: send cursor alone (it carries the updated_since its pass began with).',
        [{ pointer: '/updated_since', detail: 'is carried by the cursor; send cursor alone' }],
      )
    const now = clock.now()
    const position = input.cursor
      ? decodeSyncCursor(input.cursor)
      : {
          after: '',
          since: input.updated_since === undefined ? null : Date.parse(input.updated_since),
          began: now.getTime(),
        }
    const found = await store.syncAgents({
      after: position.after || null,
      since: position.since === null ? null : new Date(position.since),
      limit: input.limit + 1,
    })
    const shown = found.slice(0, input.limit)
    const last = shown.at(-1)
    return {
      agents: shown.map((agent) =>
        agent.listing === 'deleted'
          ? { name: agent.name, listing: 'deleted' as const, updatedAt: agent.updatedAt.toISOString() }
          : toAgentSummary(agent, now, config.baseUrl),
      ),
      limit: input.limit,
      next_cursor:
        found.length > input.limit && last
          ? encodeSyncCursor({ ...position, after: nameKey(last.name) })
          : null,
      next_updated_since: new Date(position.began - SYNC_OVERLAP_MS).toISOString(),
    }
  }
}
