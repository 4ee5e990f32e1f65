import { afterAll, describe, expect, test } from 'bun:test'
import { StoreUnavailableError } from '@agentmarket/core'
import { sampleAgent } from '@agentmarket/core/testing'
import postgres from 'postgres'
import { startMigratedPostgres } from '../../../tests/support/postgres.ts'
import { boundedCall, deadlineOf } from './faults.ts'
import { openPostgres } from './open.ts'
import { postgresStore } from './postgresStore.ts'
import type { DeadlineTimer } from './progress.ts'
import { postgresRateBuckets } from './rateBuckets.ts'

const server = await startMigratedPostgres()
afterAll(() => server.stop())

/** A timer the test fires by hand: the deadlines asked for, and each one's fire. */
function manualTimer() {
  const started: { ms: number; fire: () => void }[] = []
  const timer: DeadlineTimer = {
    start(ms, fire) {
      started.push({ ms, fire })
      return () => {}
    },
  }
  // A call given up keeps its turn until its statement ends, on a timer of ten deadlines: not one of its windows.
  const windows = () => started.filter((one) => one.ms <= 1_500)
  return { timer, started, windows }
}

/** The StoreUnavailableError `promise` rejects with (fails the test on anything else). */
async function unavailable(promise: Promise<unknown>): Promise<StoreUnavailableError> {
  const error = await promise.then(
    () => null,
    (thrown: unknown) => thrown,
  )
  expect(error).toBeInstanceOf(StoreUnavailableError)
  return error as StoreUnavailableError
}

describe('PostgreSQL faults', () => {
  test('behavior: a database that refuses connections answers database_unavailable for a read and for a write, never a driver error', async () => {
    const own = await startMigratedPostgres()
    const store = await postgresStore(await openPostgres(await own.freshUrl(), { max: 2 }))
    await store.getAgent('warm')
    await own.halt()
    const read = await unavailable(store.getAgent('nobody'))
    expect(read.code).toBe('database_unavailable')
    const write = await unavailable(store.insertAgent(sampleAgent({ name: 'refused' }), []))
    // Nothing could be sent: the write did not happen.
    expect(write.code).toBe('database_unavailable')
    expect(write.retryAfterSeconds).toBeGreaterThan(0)
    await store.close()
    await own.stop()
  })

  test('behavior: a write cut off by the server ending its session answers outcome_unknown; a read database_unavailable', async () => {
    const url = await server.freshUrl()
    const database = await openPostgres(url, { max: 1 })
    const store = await postgresStore(database)
    const killer = postgres(url, { max: 1, onnotice: () => {} })
    const [{ pid }] = (await database.sql`select pg_backend_pid() as pid`) as unknown as [{ pid: number }]
    // Hold the only connection in a statement, end its session from outside (admin_shutdown, 57P01), and see the
    // write queued behind it fail as one that may have been sent.
    const held = database.sql`select pg_sleep(5)`.catch(() => null)
    const write = store.insertAgent(sampleAgent({ name: 'cut-off' }), [])
    await killer`select pg_terminate_backend(${pid})`
    await held
    const answer = await unavailable(write)
    expect(['outcome_unknown', 'database_unavailable']).toContain(answer.code)
    expect(answer.outcome).toBe(answer.code === 'outcome_unknown' ? 'unknown' : 'unchanged')
    await killer.end()
    await store.close()
  })

  test('behavior: a write already sent when its session is ended answers outcome_unknown, exactly', async () => {
    const url = await server.freshUrl()
    const database = await openPostgres(url, { max: 1 })
    // Deadlines that never fire: the answer comes from the driver's error alone.
    const store = await postgresStore(database, { timer: manualTimer().timer })
    const other = postgres(url, { max: 2, onnotice: () => {} })
    const [{ pid }] = (await database.sql`select pg_backend_pid() as pid`) as unknown as [{ pid: number }]
    let write: Promise<unknown> = Promise.resolve()
    // Another session holds the agents table, so the insert reaches the server and waits there; its session is then
    // ended (admin_shutdown, 57P01) with the statement sent.
    await other.begin(async (locked) => {
      await locked`lock table agents in access exclusive mode`
      write = store.insertAgent(sampleAgent({ name: 'sent-then-cut' }), [])
      write.catch(() => {})
      for (;;) {
        const waiting =
          await other`select 1 from pg_stat_activity where pid = ${pid} and wait_event_type = 'Lock'`
        if (waiting.length > 0) break
        await Bun.sleep(10)
      }
      await other`select pg_terminate_backend(${pid})`
    })
    const answer = await unavailable(write)
    expect(answer.code).toBe('outcome_unknown')
    expect(answer.outcome).toBe('unknown')
    await other.end()
    await store.close()
  })

  test('behavior: a call that outlives its deadline answers 503 from the deadline path: unchanged for a read, unknown for a write', async () => {
    const url = await server.freshUrl()
    const { timer, started } = manualTimer()
    const database = await openPostgres(url, { max: 4 })
    const deadlines = { requestMs: 1_001, searchMs: 1_002, backgroundMs: 1_003 }
    const store = await postgresStore(database, { timer, deadlines })
    // Another session holds the tables: every call is sent and waits on the database's lock (a database stuck).
    const other = postgres(url, { max: 1, onnotice: () => {} })
    let release = () => {}
    let holding = () => {}
    const inside = new Promise<void>((resolve) => (holding = resolve))
    const busy = other.begin(async (tx) => {
      await tx`lock table agents, tasks in access exclusive mode`
      await new Promise<void>((resolve) => {
        release = resolve
        holding()
      })
    })
    await inside
    const read = store.getAgent('queued')
    const write = store.insertAgent(sampleAgent({ name: 'queued' }), [])
    const background = store.countPendingChecks('a-client')
    // Each call asked for its kind's deadline; firing them answers at once, the calls still waiting.
    expect(started.map((deadline) => deadline.ms)).toEqual([
      deadlines.requestMs,
      deadlines.requestMs,
      deadlines.backgroundMs,
    ])
    const answers = Promise.all([read, write, background].map((call) => unavailable(call)))
    for (const deadline of started) deadline.fire()
    expect((await answers).map((answer) => answer.code)).toEqual([
      'database_unavailable',
      'outcome_unknown',
      'database_unavailable',
    ])
    release()
    await busy
    await other.end()
    await store.close()
  })

  test('attack: a pool exhausted does not queue calls to be sent late: one waiting for a turn past its deadline answers database_unavailable unsent, a write too, and changes nothing', async () => {
    const url = await server.freshUrl()
    const { timer, started } = manualTimer()
    const database = await openPostgres(url, { max: 1 })
    const store = await postgresStore(database, { timer })
    // The pool's one turn is taken by a call held on a lock another session keeps.
    const other = postgres(url, { max: 1, onnotice: () => {} })
    let release = () => {}
    let holding = () => {}
    const inside = new Promise<void>((resolve) => (holding = resolve))
    const busy = other.begin(async (tx) => {
      await tx`lock table agents in access exclusive mode`
      await new Promise<void>((resolve) => {
        release = resolve
        holding()
      })
    })
    await inside
    const held = store.getAgent('held')
    const queued = store.insertAgent(sampleAgent({ name: 'never-sent' }), [])
    // The write waits for a turn: its timer is the admission's; firing it refuses the write before it is sent.
    const turn = started.at(-1)
    turn?.fire()
    expect((await unavailable(queued)).code).toBe('database_unavailable')
    release()
    await busy
    expect(await held).toBeNull()
    expect(await store.getAgent('never-sent')).toBeNull()
    await other.end()
    await store.close()
  })

  test('attack: under load (other calls completing) a waiting call is not refused at its deadline, so goodput never falls to zero; with none completing it is', async () => {
    const { timer, started } = manualTimer()
    const progress = { completed: 0 }
    let finishWaiting = (_: string) => {}
    const waiting = boundedCall(() => new Promise<string>((resolve) => (finishWaiting = resolve)), {
      ms: 1_500,
      wrote: true,
      timer,
      progress,
    })
    // Another call of the same store completes before the deadline fires: the database is busy, not gone.
    await boundedCall(async () => 'other', { ms: 1_500, wrote: false, timer, progress })
    started[0]?.fire()
    expect(started).toHaveLength(3)
    // Extended by a quarter deadline: a database that stops just after others completed is found within it.
    expect(started[2]?.ms).toBe(375)
    finishWaiting('served')
    expect(await waiting).toBe('served')

    // Nothing completes between two firings: the database is gone, and the call is refused.
    const stuck = boundedCall(() => new Promise<never>(() => {}), { ms: 1_500, wrote: true, timer, progress })
    const stuckDeadline = started.at(-1)
    stuckDeadline?.fire()
    expect((await unavailable(stuck)).code).toBe('outcome_unknown')
    // And a busy database never holds a call for more than 20 deadlines in all (80 extensions of a quarter each).
    const slow = boundedCall(() => new Promise<never>(() => {}), { ms: 1_500, wrote: false, timer, progress })
    for (let round = 0; round <= 80; round++) {
      progress.completed++
      started.at(-1)?.fire()
    }
    expect((await unavailable(slow)).code).toBe('database_unavailable')
  })

  test('attack: a database found down (a deadline passed with nothing completed) is not waited on again by every call: one call at a time finds out, the others answer database_unavailable unsent; the first to complete ends it', async () => {
    const { timer, started, windows } = manualTimer()
    const progress = { completed: 0 }
    let sent = 0
    const send =
      <T>(answer: Promise<T>) =>
      () => {
        sent++
        return answer
      }
    const stuck = boundedCall(send(new Promise<never>(() => {})), { ms: 1_500, wrote: true, timer, progress })
    started[0]?.fire()
    expect((await unavailable(stuck)).code).toBe('outcome_unknown')
    let finishProbe = (_: string) => {}
    const probe = boundedCall(send(new Promise<string>((resolve) => (finishProbe = resolve))), {
      ms: 1_500,
      wrote: false,
      timer,
      progress,
    })
    expect(sent).toBe(2)
    // A write while the probe is out: not sent, no deadline waited, and nothing changed.
    const refused = await unavailable(
      boundedCall(send(Promise.resolve('written')), { ms: 1_500, wrote: true, timer, progress }),
    )
    expect(refused.code).toBe('database_unavailable')
    expect(refused.retryAfterSeconds).toBeGreaterThan(0)
    expect(sent).toBe(2)
    expect(windows()).toHaveLength(2)
    finishProbe('back')
    expect(await probe).toBe('back')
    expect(
      await boundedCall(send(Promise.resolve('written')), { ms: 1_500, wrote: true, timer, progress }),
    ).toBe('written')
    expect(sent).toBe(3)
  })

  test('attack: a database that refuses connections is down at once for the other calls: a request making several does not wait for each to be refused', async () => {
    const { timer } = manualTimer()
    const progress = { completed: 0 }
    let sent = 0
    const limits = { ms: 1_500, wrote: true, timer, progress }
    const refused = () => {
      sent++
      return Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))
    }
    expect((await unavailable(boundedCall(refused, limits))).code).toBe('database_unavailable')
    let finish = (_: string) => {}
    const probe = boundedCall(() => {
      sent++
      return new Promise<string>((resolve) => (finish = resolve))
    }, limits)
    const skipped = await unavailable(
      boundedCall(() => {
        sent++
        return Promise.resolve('written')
      }, limits),
    )
    expect(skipped.code).toBe('database_unavailable')
    expect(sent).toBe(2)
    finish('back')
    expect(await probe).toBe('back')
  })

  test('attack: a busy database is not taken for a gone one: a connection that timed out or a full connection table refuses that call only; the next is sent', async () => {
    const { timer } = manualTimer()
    const progress = { completed: 0 }
    const limits = { ms: 1_500, wrote: true, timer, progress }
    for (const code of ['CONNECT_TIMEOUT', '53300']) {
      const busy = () => Promise.reject(Object.assign(new Error(`busy: ${code}`), { code }))
      expect((await unavailable(boundedCall(busy, limits))).code).toBe('database_unavailable')
      // Two calls at once: taken for down, the database would get one (a probe) and refuse the other unsent.
      let finish = (_: string) => {}
      const first = boundedCall(() => new Promise<string>((resolve) => (finish = resolve)), limits)
      expect(await boundedCall(async () => 'sent', limits)).toBe('sent')
      finish('sent too')
      expect(await first).toBe('sent too')
    }
  })

  test('attack: a database shutting down (finishing some statements while refusing new connections) is not waited on past a deadline: the waiting call gets no extension', async () => {
    const { timer, started, windows } = manualTimer()
    const progress = { completed: 0 }
    const limits = { ms: 1_500, wrote: true, timer, progress }
    const waiting = boundedCall(() => new Promise<never>(() => {}), limits)
    // Meanwhile one call completes and another is refused a connection.
    expect(await boundedCall(async () => 'finished', limits)).toBe('finished')
    const refused = () =>
      Promise.reject(Object.assign(new Error('the database system is shutting down'), { code: '57P03' }))
    expect((await unavailable(boundedCall(refused, limits))).code).toBe('database_unavailable')
    const deadlines = windows().length
    started[0]?.fire()
    expect((await unavailable(waiting)).code).toBe('outcome_unknown')
    expect(windows()).toHaveLength(deadlines)
  })

  test('attack: the store and the rate buckets of one frozen database share what it found: after a deadline, a rate-limit take answers at once instead of waiting its own', async () => {
    const own = await startMigratedPostgres()
    const { timer, started } = manualTimer()
    const database = await openPostgres(await own.freshUrl(), { max: 2 })
    const store = await postgresStore(database, { timer })
    const buckets = postgresRateBuckets(database, { timer })
    const policy = { name: 'write', limit: 10, windowSeconds: 60 }
    expect((await buckets.take('warm', policy, 1, Date.now())).allowed).toBe(true)
    own.freeze()
    try {
      const first = store.getAgent('frozen')
      started.at(-1)?.fire()
      expect((await unavailable(first)).code).toBe('database_unavailable')
      // The next call finds out whether the database is back; every other one meanwhile answers at once.
      const probe = store.getAgent('probe').catch((error: unknown) => error)
      const deadlines = started.length
      expect((await unavailable(buckets.take('client', policy, 1, Date.now()))).code).toBe(
        'database_unavailable',
      )
      expect((await unavailable(store.insertAgent(sampleAgent({ name: 'unsent' }), []))).code).toBe(
        'database_unavailable',
      )
      expect(started).toHaveLength(deadlines)
      own.thaw()
      expect(await probe).toBeNull()
      expect((await buckets.take('client', policy, 1, Date.now())).allowed).toBe(true)
      expect(await store.getAgent('unsent')).toBeNull()
    } finally {
      own.thaw()
      await store.close()
      await own.stop()
    }
  })

  test('behavior: each kind of work has its own deadline: requests, searches, background passes', () => {
    const deadlines = { requestMs: 1, searchMs: 2, backgroundMs: 3 }
    expect(deadlineOf('insertAgent', deadlines)).toBe(1)
    expect(deadlineOf('listAgents', deadlines)).toBe(2)
    expect(deadlineOf('claimDueDeliveries', deadlines)).toBe(3)
  })

  test('behavior: the pool and migrations run under the timeouts they are given (connect, statement, migration)', async () => {
    const url = await server.freshUrl()
    const database = await openPostgres(url, { max: 1, timeouts: { statementMs: 1234, connectMs: 500 } })
    const [row] = await database.sql`show statement_timeout`
    expect(row?.statement_timeout).toBe('1234ms')
    expect(database.sql.options.connect_timeout).toBe(0.5)
    await database.close()
  })

  test('behavior: the driver survives its session being ended mid-transaction (no uncaught TypeError from socket.write)', async () => {
    const url = await server.freshUrl()
    const sql = postgres(url, { max: 2, onnotice: () => {} })
    const killer = postgres(url, { max: 1, onnotice: () => {} })
    let pid: number | null = null
    let holding = () => {}
    const inside = new Promise<void>((resolve) => (holding = resolve))
    // postgres.js sends its own ROLLBACK after the failed statement: before the patch (patches/postgres@3.4.9.patch)
    // that write landed on the closed socket and threw from a setImmediate, ending the process.
    const transaction = sql.begin(async (tx) => {
      const [row] = await tx`select pg_backend_pid() as pid`
      pid = Number(row?.pid)
      holding()
      await tx`select pg_sleep(5)`
    })
    await inside
    await killer`select pg_terminate_backend(${pid})`
    const failed = await transaction.then(
      () => null,
      (error: { code?: string }) => error.code,
    )
    expect(failed).toBe('CONNECTION_CLOSED')
    // The pool serves again after it.
    const [again] = await sql`select 1 as one`
    expect(again?.one).toBe(1)
    await Promise.all([sql.end({ timeout: 1 }), killer.end({ timeout: 1 })])
  })
})
