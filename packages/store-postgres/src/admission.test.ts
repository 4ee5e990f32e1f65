import { describe, expect, test } from 'bun:test'
import { inChainBudget, StoreUnavailableError } from '@agentmarket/core'
import { admissionOf, admit } from './admission.ts'
import { boundedCall } from './faults.ts'
import type { DeadlineTimer } from './progress.ts'

/** A clock the test moves by hand: timers fire when it passes them. */
function manualClock() {
  let at = 0
  const timers: { due: number; fire: () => void; cancelled: boolean }[] = []
  const clock: DeadlineTimer & { now(): number } = {
    now: () => at,
    start(ms, fire) {
      const timer = { due: at + ms, fire, cancelled: false }
      timers.push(timer)
      return () => {
        timer.cancelled = true
      }
    },
  }
  const advance = async (ms: number) => {
    at += ms
    for (const timer of timers.filter((one) => !one.cancelled && one.due <= at)) {
      timer.cancelled = true
      timer.fire()
    }
    await Bun.sleep(0)
  }
  return { clock, advance }
}

/** The outcome of `promise` so far: its value, its error's outcome, or 'waiting'. */
function watch<T>(promise: Promise<T>) {
  const seen: { state: 'waiting' | 'done' | 'refused'; value?: T; error?: unknown } = { state: 'waiting' }
  promise.then(
    (value) => Object.assign(seen, { state: 'done', value }),
    (error: unknown) => Object.assign(seen, { state: 'refused', error }),
  )
  return seen
}

/** A call the test ends by hand. */
function heldCall() {
  let end = () => {}
  const sent = { times: 0 }
  const call = () => {
    sent.times++
    return new Promise<string>((resolve) => (end = () => resolve('answered')))
  }
  return { call, sent, end: () => end() }
}

/** A manual clock, an admission of `connections` turns, and the limits of a bounded call with a 1.5 s deadline. */
function bounded(connections = 1) {
  const { clock, advance } = manualClock()
  const admission = admissionOf({}, connections)
  const progress = { completed: 0 }
  const limits = { ms: 1_500, wrote: true, timer: clock, progress, admission }
  return { advance, admission, progress, limits }
}

describe('admission: at most one call per connection is sent; the others wait in deadline order', () => {
  const windows = { first: 1_500, ms: 1_500 }

  test('attack: a call waiting for a turn while no call of the database completes is refused unsent (database_unavailable), and its turn goes to the next', async () => {
    const { clock, advance } = manualClock()
    const admission = admissionOf({}, 1)
    const progress = { completed: 0 }
    const first = admit(admission, 1_000, windows, clock, progress)
    expect(typeof first).toBe('function')
    const late = watch(Promise.resolve(admit(admission, 500, { first: 500, ms: 1_500 }, clock, progress)))
    const next = watch(Promise.resolve(admit(admission, 2_000, windows, clock, progress)))
    await advance(500)
    expect(late.state).toBe('refused')
    expect((late.error as StoreUnavailableError).outcome).toBe('unchanged')
    expect(progress).toMatchObject({ down: true })
    expect(next.state).toBe('waiting')
    ;(first as () => void)()
    await Bun.sleep(0)
    expect(next.state).toBe('done')
    expect(admission.out).toBe(1)
  })

  test('attack: a busy pool is not refused by the clock for a background pass: its call waiting while other calls complete waits on past its deadline, and gets its turn', async () => {
    const { clock, advance } = manualClock()
    const admission = admissionOf({}, 1)
    const progress = { completed: 0 }
    let release = admit(admission, 0, windows, clock, progress) as () => void
    const waiting = watch(Promise.resolve(admit(admission, 1_500, windows, clock, progress)))
    // Calls of the database keep completing (the other process's, the turn's holder handing over to another).
    for (let step = 0; step < 8; step++) {
      progress.completed++
      await advance(500)
    }
    expect(waiting.state).toBe('waiting')
    release()
    await Bun.sleep(0)
    expect(waiting.state).toBe('done')
    release = waiting.value as () => void
    release()
    expect(admission.out).toBe(0)
  })

  test('behavior: the line is ordered by deadline, not arrival: a request under way goes before one that just came', async () => {
    const { clock } = manualClock()
    const admission = admissionOf({}, 1)
    const progress = { completed: 0 }
    const release = admit(admission, 100, windows, clock, progress) as () => void
    const order: string[] = []
    const newer = Promise.resolve(admit(admission, 1_500, windows, clock, progress)).then((done) => {
      order.push('newer')
      done()
    })
    const older = Promise.resolve(admit(admission, 900, windows, clock, progress)).then((done) => {
      order.push('older')
      done()
    })
    release()
    await Promise.all([newer, older])
    expect(order).toEqual(['older', 'newer'])
  })

  test('attack: a release called twice (at the deadline and again at the end) gives back one turn', () => {
    const { clock } = manualClock()
    const admission = admissionOf({}, 2)
    const progress = { completed: 0 }
    const release = admit(admission, 100, windows, clock, progress) as () => void
    admit(admission, 100, windows, clock, progress)
    release()
    release()
    expect(admission.out).toBe(1)
  })

  test('attack: a request making several calls waits its bound once in all, not once per call: its next call that must wait is given up after a quarter deadline with nothing completed, unsent', async () => {
    const { advance, progress, limits } = bounded()
    const other = heldCall()
    const holder = watch(boundedCall(other.call, limits))
    const mine = heldCall()
    const request = inChainBudget(undefined, async () => {
      // The request's first call waits 1.2 s for its turn (the database busy: a call completes meanwhile).
      const first = boundedCall(async () => 'read', { ...limits, wrote: false })
      await advance(1_000)
      progress.completed++
      await advance(200)
      other.end()
      await first
      // The turn went to a background call; nothing completes now. The request has 0.3 s left of its 1.5 s: its
      // next call waits a quarter deadline (never less), not a whole one.
      const second = boundedCall(mine.call, limits).catch((error: unknown) => error)
      await advance(375)
      return second
    })
    // Outside the request, a background pass's call lines up behind it and takes the turn after it.
    void boundedCall(heldCall().call, { ...limits, ms: 6_000 }).catch(() => {})
    const outcome = await request
    expect(holder.state).toBe('done')
    expect(outcome).toBeInstanceOf(StoreUnavailableError)
    expect((outcome as StoreUnavailableError).outcome).toBe('unchanged')
    expect(mine.sent.times).toBe(0)
  })

  test('attack: a request that has waited its bound is not made the probe of a database found down: its next call answers database_unavailable at once, unsent; a call of another request probes', async () => {
    const { advance, limits } = bounded(4)
    const frozen = heldCall()
    const late = heldCall()
    const outcome = await inChainBudget(undefined, async () => {
      // The database freezes under the request's first call: a whole deadline with nothing completed.
      const first = boundedCall(frozen.call, limits).catch((error: unknown) => error)
      await advance(1_500)
      expect(await first).toBeInstanceOf(StoreUnavailableError)
      // Its next call (writing how the key ended, say) would probe and wait a window more.
      const next = watch(boundedCall(late.call, limits))
      await advance(0)
      return next
    })
    expect(outcome.state).toBe('refused')
    expect(late.sent.times).toBe(0)
    // A new request still finds out whether the database is back.
    const probe = heldCall()
    const probing = inChainBudget(undefined, () => boundedCall(probe.call, limits))
    await advance(0)
    expect(probe.sent.times).toBe(1)
    probe.end()
    expect(await probing).toBe('answered')
  })

  test("attack: a pool exhausted answers a request within its bound: a request's call waiting for a turn is refused unsent once the request has waited its bound in all, even while other calls complete", async () => {
    const { advance, admission, progress, limits } = bounded()
    const holder = heldCall()
    void boundedCall(holder.call, limits).catch(() => {})
    const mine = heldCall()
    const request = inChainBudget(undefined, async () => {
      const waiting = watch(boundedCall(mine.call, limits))
      // The database is busy, not gone: a call of another process completes every 100 ms.
      for (let step = 0; step < 14; step++) {
        progress.completed++
        await advance(100)
      }
      expect(waiting.state).toBe('waiting')
      progress.completed++
      await advance(100)
      return waiting
    })
    const outcome = await request
    expect(outcome.state).toBe('refused')
    expect((outcome.error as StoreUnavailableError).outcome).toBe('unchanged')
    expect(mine.sent.times).toBe(0)
    expect(admission.waiting).toHaveLength(0)
    holder.end()
  })
})

describe('a call given up keeps its turn while its statement runs on', () => {
  test('attack: the next call is not sent while a given-up statement still holds the connection (the driver would queue it behind and send it however late), and is sent once that statement ends', async () => {
    const { advance, admission, limits } = bounded()
    const slow = heldCall()
    const first = watch(boundedCall(slow.call, limits))
    // A window with nothing completed: the caller is answered, the statement runs on.
    await advance(1_500)
    expect(first.state).toBe('refused')
    const next = heldCall()
    const second = watch(boundedCall(next.call, { ...limits, ms: 10_000 }))
    await advance(1_000)
    expect(next.sent.times).toBe(0)
    expect(admission.out).toBe(1)
    slow.end()
    await advance(0)
    expect(next.sent.times).toBe(1)
    next.end()
    await advance(0)
    expect(second.state).toBe('done')
    expect(admission.out).toBe(0)
  })

  test('attack: a given-up statement that never ends (a connection gone silent) gives its turn back after its hold', async () => {
    const { advance, admission, limits } = bounded()
    void boundedCall(heldCall().call, { ...limits, holdMs: 5_000 }).catch(() => {})
    await advance(1_500)
    expect(admission.out).toBe(1)
    await advance(5_000)
    expect(admission.out).toBe(0)
  })
})

describe('admission under overload: the requests a node can serve are answered, not every one shed', () => {
  /**
   * Requests of three calls each (40 ms of the database per call, two connections) arrive every `everyMs` for
   * `forMs` on the test's clock; each request's calls are bounded as the store bounds them (1.2 s in all). The
   * outcome of each: answered, or refused 503.
   */
  async function overload(everyMs: number, forMs: number) {
    const { clock, advance } = manualClock()
    const progress = { completed: 0 }
    const limits = { ms: 1_200, wrote: true, timer: clock, progress, admission: admissionOf({}, 2) }
    const running: { due: number; end: () => void }[] = []
    const databaseCall = () =>
      new Promise<void>((resolve) => running.push({ due: (clock.now() ?? 0) + 40, end: resolve }))
    const outcomes: Promise<'answered' | 'refused'>[] = []
    for (let at = 0; at < forMs + 5_000; at += 10) {
      if (at < forMs && at % everyMs === 0)
        outcomes.push(
          inChainBudget(undefined, async () => {
            for (let call = 0; call < 3; call++) await boundedCall(databaseCall, limits)
            return 'answered' as const
          }).catch(() => 'refused' as const),
        )
      for (const call of running.filter((one) => one.due <= at)) {
        running.splice(running.indexOf(call), 1)
        call.end()
      }
      await advance(10)
    }
    const all = await Promise.all(outcomes)
    return { answered: all.filter((one) => one === 'answered').length, total: all.length }
  }

  test('attack: twice the requests the database can serve, for six seconds: most of what it can serve is answered within the bound', async () => {
    // Two connections, 120 ms of calls a request: at most 16.7 requests a second, 100 in six seconds; 200 come.
    const { answered, total } = await overload(30, 6_000)
    expect(total).toBe(200)
    expect(answered).toBeGreaterThanOrEqual(70)
  })

  test('behavior: below capacity every request is answered', async () => {
    const { answered, total } = await overload(100, 3_000)
    expect(answered).toBe(total)
  })
})
