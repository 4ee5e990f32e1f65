import { STORE_READ_METHODS, type Store } from '@agentmarket/core'
import type { PostgresDatabase } from './open.ts'

/** The channel migration 0001's triggers notify after a transaction that changed what public reads show. */
export const CHANGE_CHANNEL = 'agentmarket_change'

/** While no LISTEN connection is up, how long one version answers: other nodes' writes show within it. */
export const FALLBACK_WINDOW_MS = 2

/**
 * Gives `store` a `changeVersion` moved by PostgreSQL's notices: every node LISTENs on CHANGE_CHANNEL, so another
 * node's write shows here as soon as its notice arrives (after its commit), and this node's own writes move a local
 * count at once. postgres.js reconnects a dropped LISTEN connection by itself; a notice lost meanwhile cannot be told
 * apart from none, so each (re)connection starts a new epoch (what was cached before it is read again). Where LISTEN
 * cannot be had (a pooler in transaction mode), the version moves every FALLBACK_WINDOW_MS instead: polling by time.
 */
export async function withChangeVersion(store: Store, { sql, nodeId }: PostgresDatabase) {
  let epoch = 0
  let notices = 0
  let localWrites = 0
  let listening = false
  const subscription = await sql
    .listen(
      CHANGE_CHANNEL,
      (writer) => {
        // Our own writes moved localWrites when they returned; their notices come later and would move it twice.
        if (writer !== nodeId) notices++
      },
      () => {
        epoch++
        listening = true
      },
    )
    .catch(() => null)
  const counted: Store = { ...store }
  for (const [name, method] of Object.entries(store) as [string, unknown][]) {
    if (STORE_READ_METHODS.has(name) || typeof method !== 'function') continue
    Object.assign(counted, {
      [name]: async (...args: unknown[]) => {
        try {
          return await (method as (...values: unknown[]) => Promise<unknown>)(...args)
        } finally {
          localWrites++
        }
      },
    })
  }
  counted.changeVersion = async () => {
    const window = listening ? 'n' : String(Math.floor(performance.now() / FALLBACK_WINDOW_MS))
    return `${epoch}.${notices}.${localWrites}.${window}`
  }
  counted.close = async () => {
    await subscription?.unlisten().catch(() => {})
    await store.close()
  }
  return counted
}
