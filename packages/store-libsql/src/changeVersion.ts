import type { Store } from '@agentmarket/core'
import { afterEachWrite } from '@agentmarket/core/rows'
import type { Connection } from './connection.ts'

/** How long one read of the database's counter answers for this process: other processes' writes show after it. */
export const CHANGE_WINDOW_MS = 2

/**
 * Gives `store` a `changeVersion`: the database's change counter (moved by triggers on every write, from any process)
 * joined with a count of this process's writes, so this process's readers see its own writes at once and other
 * processes' writes within `windowMs`; one counter read serves every caller in that window.
 */
export function withChangeVersion(store: Store, connection: Connection, windowMs = CHANGE_WINDOW_MS): Store {
  let localWrites = 0
  let last: { at: number; version: Promise<number> } | null = null
  const databaseVersion = () => {
    const at = performance.now()
    if (last && at - last.at <= windowMs) return last.version
    const version = Promise.resolve().then(() =>
      Number(connection.values('select version from change_version where id = 1')[0]?.[0] ?? 0),
    )
    last = { at, version }
    version.catch(() => {
      last = null
    })
    return version
  }
  const counted = afterEachWrite(store, () => {
    localWrites++
    last = null
  })
  // The same promise (and the same string) while neither counter moved: every cached read asks for the version, and
  // compares it to the one its entry was made under.
  let shown: { of: Promise<number>; writes: number; version: Promise<string> } | null = null
  counted.changeVersion = () => {
    const of = databaseVersion()
    if (shown?.of !== of || shown.writes !== localWrites) {
      const writes = localWrites
      shown = { of, writes, version: of.then((version) => `${version}.${writes}`) }
    }
    return shown.version
  }
  return counted
}
