import type { Store } from '@agentmarket/core'
import { agentStore } from './agentStore.ts'
import { withChangeVersion } from './changeVersion.ts'
import { kvStore } from './kvStore.ts'
import { mailStore } from './mailStore.ts'
import type { Database } from './open.ts'
import { searchIndexer } from './searchIndex.ts'
import { taskStore } from './taskStore.ts'
import { userStore } from './userStore.ts'
import { webhookStore } from './webhookStore.ts'

/**
 * The Store over libSQL with drizzle, one file per aggregate as store-postgres's. Multi-statement writes run as one
 * `BEGIN IMMEDIATE` batch: all of it lands or none of it, and writers in other processes wait on the database lock
 * instead of failing. `searchIndex` sets when the search index's tail is indexed (searchIndex.ts; tests make it small).
 * @example const store = libsqlStore(await openDatabase('file:./data/market.db'))
 */
export function libsqlStore(
  database: Database,
  options: { searchIndex?: Parameters<typeof searchIndexer>[1] } = {},
): Store {
  const { connection } = database
  const searchIndex = searchIndexer(connection, options.searchIndex)
  const store: Store = {
    ...agentStore(database, searchIndex),
    ...userStore(database),
    ...taskStore(database),
    ...mailStore(database),
    ...webhookStore(database),
    ...kvStore(database),

    async ping() {
      // Fixed text, prepared once: health checks poll this.
      connection.values('select 1 from agents limit 1')
      // Reads still answer on a full disk: after a write found it full, a real commit (the change counter moved by
      // one) tells whether writes land again, so health stays unready until they do.
      if (connection.storageFull)
        await connection.writeTransaction(() =>
          connection.run('update change_version set version = version + 1 where id = 1'),
        )
    },

    async close() {
      searchIndex.stop()
      database.close()
    },
  }
  return withChangeVersion(store, connection)
}
