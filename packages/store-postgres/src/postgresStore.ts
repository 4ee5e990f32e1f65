import type { Store } from '@agentmarket/core'
import { afterEachWrite } from '@agentmarket/core/rows'
import { admissionOf } from './admission.ts'
import { agentStore } from './agentStore.ts'
import { changeVersion } from './changeVersion.ts'
import { boundedStore, type CallDeadlines, classifyPostgresFault } from './faults.ts'
import { EVENTS_CHANNEL, feedSequencer } from './feedSequencer.ts'
import { kvStore } from './kvStore.ts'
import { mailStore } from './mailStore.ts'
import type { PostgresDatabase } from './open.ts'
import { type DeadlineTimer, progressOf, systemTimer } from './progress.ts'
import { taskStore } from './taskStore.ts'
import { userStore } from './userStore.ts'
import { webhookStore } from './webhookStore.ts'

/** How long each kind of store call may take unless told otherwise (faults.ts). */
export const CALL_DEADLINES: CallDeadlines = { requestMs: 1_200, searchMs: 1_500, backgroundMs: 10_000 }

/**
 * The Store over PostgreSQL, for many server nodes on one database: each write is one transaction whose conditions
 * are in its statements, claims are unique keys, queues are claimed with FOR UPDATE SKIP LOCKED, feed events are
 * positioned in commit order (feedSequencer.ts), and read caches and feeds follow other nodes' writes by LISTEN/NOTIFY.
 * Every call answers within its kind's deadline, and a database that is down answers StoreUnavailableError (faults.ts).
 * @example const store = await postgresStore(await openPostgres(process.env.DATABASE_URL))
 */
export async function postgresStore(
  database: PostgresDatabase,
  {
    deadlines = CALL_DEADLINES,
    timer = systemTimer,
  }: { deadlines?: CallDeadlines; timer?: DeadlineTimer } = {},
): Promise<Store> {
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
  // Each write's feed events get their positions before it returns, and this node's read caches see it at once. A
  // write that committed stays a success when the database goes away just after: the sweep positions its events
  // once the database is back (SWEEP_MS), and any node's next write does too. The deadline covers both steps.
  const sequenced = afterEachWrite(store, async () => {
    version.wrote()
    await sequencer.run().catch((error) => {
      if (!classifyPostgresFault(error, { wrote: false })) throw error
    })
  })
  return boundedStore(
    sequenced,
    deadlines,
    timer,
    progressOf(database),
    admissionOf(database, database.sql.options.max),
  )
}
