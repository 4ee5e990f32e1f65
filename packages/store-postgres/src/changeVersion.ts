import type { PostgresDatabase } from './open.ts'

/** The channel migration 0001's triggers notify after a transaction that changed what public reads show. */
export const CHANGE_CHANNEL = 'agentmarket_change'

/** While no LISTEN connection is up, how long one version answers: other nodes' writes show within it. */
export const FALLBACK_WINDOW_MS = 2

/**
 * The store's change version, moved by PostgreSQL's notices: every node LISTENs on CHANGE_CHANNEL, so another node's
 * write shows here as soon as its notice arrives (after its commit), and this node's own writes (`wrote`) move a local
 * count at once; the notices of its own writes name it (application_name) and are skipped. postgres.js reconnects a
 * dropped LISTEN connection by itself; a notice lost meanwhile cannot be told apart from none, so each (re)connection
 * starts a new epoch (what was cached before it is read again). Where LISTEN cannot be had (a pooler in transaction
 * mode), the version moves every FALLBACK_WINDOW_MS instead: polling by time.
 */
export async function changeVersion({ sql, nodeId }: PostgresDatabase) {
  let epoch = 0
  let notices = 0
  let localWrites = 0
  const subscription = await sql
    .listen(
      CHANGE_CHANNEL,
      (writer) => {
        if (writer !== nodeId) notices++
      },
      () => {
        epoch++
      },
    )
    .catch(() => null)
  // postgres.js resolves listen only once LISTEN is in place, so a subscription is what listening means.
  const listening = subscription !== null
  return {
    /** The version now (Store.changeVersion). */
    read: async () => {
      const window = listening ? 'n' : String(Math.floor(performance.now() / FALLBACK_WINDOW_MS))
      return `${epoch}.${notices}.${localWrites}.${window}`
    },
    /** Counts a write of this node: its readers see it at once. */
    wrote: () => {
      localWrites++
    },
    /** Stops listening. */
    stop: async () => {
      await subscription?.unlisten().catch(() => {})
    },
  }
}
