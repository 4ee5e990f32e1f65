import type { Store } from '@agentmarket/core'
import { agentStore } from './agentStore.ts'
import { withChangeVersion } from './changeVersion.ts'
import { kvStore } from './kvStore.ts'
import { mailStore } from './mailStore.ts'
import type { PostgresDatabase } from './open.ts'
import { taskStore } from './taskStore.ts'
import { userStore } from './userStore.ts'

/**
 * The Store over PostgreSQL, for many server nodes on one database: each write is one transaction whose conditions
 * are in its statements, claims are unique keys, queues are claimed with FOR UPDATE SKIP LOCKED, and read caches
 * follow other nodes' writes by LISTEN/NOTIFY.
 * @example const store = await postgresStore(await openPostgres(process.env.DATABASE_URL))
 */
export async function postgresStore(database: PostgresDatabase): Promise<Store> {
  const store: Store = {
    ...agentStore(database),
    ...userStore(database),
    ...taskStore(database),
    ...mailStore(database),
    ...kvStore(database),
    async ping() {
      await database.sql`select 1`
    },
    close: () => database.close(),
  }
  return withChangeVersion(store, database)
}
