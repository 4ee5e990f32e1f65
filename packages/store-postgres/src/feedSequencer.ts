import type { PostgresDatabase } from './open.ts'

/** The channel a node announces newly positioned feed events on (every node's feed hub listens). */
export const EVENTS_CHANNEL = 'agentmarket_events'

/** How often each node positions what no writer did (a node killed between its commit and its sequencing). */
export const SWEEP_MS = 1_000

// Any fixed number: the advisory lock that makes sequencing one node at a time.
const SEQUENCER_LOCK = 8_400_102

/**
 * Gives feed events their public position in commit order. A transaction draws `seq` when it inserts but may commit
 * after a later one, so a reader paging by `seq` could pass an event that commits afterwards and never see it.
 * Positions go to the events the sequencer can see (committed ones: an open transaction's are invisible to it), in
 * `seq` order, continuing the largest position, under an advisory lock: every position is final when a reader can
 * see it, and an event that commits later is positioned after every one already shown. Waiting for the oldest running
 * transaction instead would let any long transaction of the cluster (another database's included: transaction ids
 * are the cluster's) hold back the feed. Every node runs it after each of its writes and every SWEEP_MS.
 * @example const sequencer = feedSequencer(database); await sequencer.run(); sequencer.stop()
 */
export function feedSequencer({ sql }: PostgresDatabase) {
  let running: Promise<void> | null = null
  let again = false
  // One round trip: statements sent together in one simple query run as one transaction, so the advisory lock is
  // held from before the positions are computed until they are committed. Its turn is waited for however short the
  // pool's lock_timeout is (the sequencer runs outside any request).
  const sequence = async () => {
    await sql.unsafe(`set local lock_timeout = 0; select pg_advisory_xact_lock(${SEQUENCER_LOCK});
      with ready as (
        select seq, row_number() over (order by seq) as n from events
        where position is null
      ), base as (select coalesce(max(position), 0) as last from events),
      positioned as (
        update events set position = base.last + ready.n from ready, base where events.seq = ready.seq returning 1
      )
      select pg_notify('${EVENTS_CHANNEL}', '') from (select 1 from positioned limit 1) as any_positioned;`)
  }
  // Callers that arrive while a run is under way share the next one, so a burst of writes sequences twice, not N times.
  const run = async (): Promise<void> => {
    if (running) {
      again = true
      return running
    }
    running = (async () => {
      do {
        again = false
        await sequence()
      } while (again)
    })().finally(() => {
      running = null
    })
    return running
  }
  const sweep = setInterval(() => void run().catch(() => {}), SWEEP_MS)
  sweep.unref?.()
  return {
    /** Positions every event of a finished transaction; resolves once they are visible to readers. */
    run,
    /** Stops the sweep. */
    stop: () => clearInterval(sweep),
  }
}
