import type { Store } from '@agentmarket/core'
import { afterEachWrite } from '@agentmarket/core/rows'
import { agentStore } from './agentStore.ts'
import { changeVersion } from './changeVersion.ts'
import { EVENTS_CHANNEL, feedSequencer } from './feedSequencer.ts'
import { kvStore } from './kvStore.ts'
import { mailStore } from './mailStore.ts'
import type { PostgresDatabase } from './open.ts'
import { taskStore } from './taskStore.ts'
import { userStore } from './userStore.ts'
import { webhookStore } from './webhookStore.ts'

/**
 * The Store over PostgreSQL, for many server nodes on one database: each write is one transaction whose conditions
 * are in its statements, claims are unique keys, queues are claimed with FOR UPDATE SKIP LOCKED, feed events are
 * positioned in commit order (feedSequencer.ts), and read caches and feeds follow other nodes' writes by LISTEN/NOTIFY.
 * @example const store = await postgresStore(await openPostgres(process.env.DATABASE_URL))
 */
export async function postgresStore(database: PostgresDatabase): Promise<Store> {
  const sequencer = feedSequencer(database)
  const version = await changeVersion(database)
  const store: Store = {
    ...agentStore(database),
    ...userStore(database),
    ...taskStore(database),
    ...mailStore(database),
    ...webhookStore(database),
    ...kvStore(database),
    changeVersion: version.read,
    watchEvents(onNew) {
      const listening = database.sql.listen(EVENTS_CHANNEL, () => onNew()).catch(() => null)
      return () => void listening.then((subscription) => subscription?.unlisten()).catch(() => {})
    },
    async ping() {
      await database.sql`select 1`
    },
    async close() {
      sequencer.stop()
      await version.stop()
      await database.close()
    },
  }
  // Each write's feed events get their positions before it returns, and this node's read caches see it at once.
  return afterEachWrite(store, async () => {
    version.wrote()
    await sequencer.run()
  })
}
