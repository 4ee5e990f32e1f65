import type { Connection } from './connection.ts'

// The search index is written in batches (migration 0027): agents past agent_search_indexed.through are the tail,
// found by reading their texts (agentList.ts), until a pass indexes them.

/** From this many agents registered by this process since its last pass, the tail is indexed at once. */
export const SEARCH_BATCH = 1_000
/** A smaller tail waits this long after its first agent, so a quiet market's searches read a few agents at most. */
export const SEARCH_INDEX_DELAY_MS = 1_000

/** The largest rowid indexed: every agent past it is the tail. */
export const INDEXED_THROUGH = '(select through from agent_search_indexed where id = 1)'

// Fixed texts, prepared once by the connection. Lower-cased as migration 0018 indexes; withdrawn agents left out.
const INDEX_TAIL = `insert into agent_search (rowid, name, bio, skill_text)
  select rowid, lower(name), lower(coalesce(bio, '')), lower(skill_text) from agents
  where rowid > ${INDEXED_THROUGH} and listing <> 'deleted'`
// Written only when it moves: a start with no tail writes no page.
const MOVE_WATERMARK = `update agent_search_indexed set through = (select coalesce(max(rowid), 0) from agents)
  where id = 1 and through <> (select coalesce(max(rowid), 0) from agents)`

/**
 * Indexes every agent of the tail and moves the watermark past it; inside the caller's write transaction, so both land
 * or neither does (a crash between them cannot lose an entry or index one twice).
 */
export function indexSearchTail(connection: Connection): void {
  connection.run(INDEX_TAIL)
  connection.run(MOVE_WATERMARK)
}

/** Schedules the passes of one store: `added` after agents are registered, `stop` when the store closes. */
export type SearchIndexer = { added(count: number): void; stop(): void }

/**
 * Indexes the tail once this process has registered `batch` agents since its last pass, or `delayMs` after the first
 * of fewer. A pass joins the next group commit; one that fails (a full disk, a held lock) leaves the tail to be read
 * and indexed by a later pass or at the next start, so nothing depends on it but the cost of a search.
 */
export function searchIndexer(
  connection: Connection,
  { batch = SEARCH_BATCH, delayMs = SEARCH_INDEX_DELAY_MS } = {},
): SearchIndexer {
  let pending = 0
  let timer: ReturnType<typeof setTimeout> | undefined
  let stopped = false
  const pass = () => {
    clearTimeout(timer)
    timer = undefined
    pending = 0
    if (stopped) return
    connection.commitTogether(() => indexSearchTail(connection)).catch(() => undefined)
  }
  return {
    added(count) {
      pending += count
      if (pending >= batch) pass()
      else if (pending > 0 && timer === undefined) {
        timer = setTimeout(pass, delayMs)
        // A pending pass never keeps a process alive: the next start indexes the tail.
        timer.unref?.()
      }
    },
    stop() {
      stopped = true
      clearTimeout(timer)
    },
  }
}
