import { describe, expect, test } from 'bun:test'
import { inChainBudget, StoreUnavailableError } from '@agentmarket/core'
import { type AdmissionClock, admissionOf, admit } from './admission.ts'
import { boundedCall, type DeadlineTimer } from './faults.ts'

/** A clock the test moves by hand: timers fire when it passes them. */
function manualClock() {
  let at = 0
  const timers: { due: number; fire: () => void; cancelled: boolean }[] = []
  const clock: AdmissionClock & DeadlineTimer = {
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

describe('admission: at most one call per connection is sent; the others wait in deadline order', () => {
  test('attack: a call waiting for a turn past its deadline is refused unsent (database_unavailable), and its turn goes to the next', async () => {
    const { clock, advance } = manualClock()
    const admission = admissionOf({}, 1)
    const first = admit(admission, 1_000, clock)
    expect(typeof first).toBe('function')
    const late = watch(Promise.resolve(admit(admission, 500, clock)))
    const next = watch(Promise.resolve(admit(admission, 2_000, clock)))
    await advance(500)
    expect(late.state).toBe('refused')
    expect((late.error as StoreUnavailableError).outcome).toBe('unchanged')
    expect(next.state).toBe('waiting')
    ;(first as () => void)()
    await Bun.sleep(0)
    expect(next.state).toBe('done')
    expect(admission.out).toBe(1)
  })

  test('behavior: the line is ordered by deadline, not arrival: a request under way goes before one that just came', async () => {
    const { clock } = manualClock()
    const admission = admissionOf({}, 1)
    const release = admit(admission, 100, clock) as () => void
    const order: string[] = []
    const newer = Promise.resolve(admit(admission, 1_500, clock)).then((done) => {
      order.push('newer')
      done()
    })
    const older = Promise.resolve(admit(admission, 900, clock)).then((done) => {
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
    const release = admit(admission, 100, clock) as () => void
    admit(admission, 100, clock)
    release()
    release()
    expect(admission.out).toBe(1)
  })

  test('attack: a request making several calls waits its bound once in all, not once per call: its next call that must wait is refused at once, unsent', async () => {
    const { clock, advance } = manualClock()
    const admission = admissionOf({}, 1)
    const progress = { completed: 0 }
    const limits = { ms: 1_500, wrote: true, timer: clock, progress, admission }
    const other = heldCall()
    const holder = watch(boundedCall(other.call, limits))
    const mine = heldCall()
    const outcome = watch(
      inChainBudget(undefined, async () => {
        // The request's first call waits 1.2 s for its turn, then is answered.
        const first = boundedCall(async () => 'read', { ...limits, wrote: false })
        await advance(1_200)
        other.end()
        await first
        // The turn is busy again: the second call may wait what is left of the request's 1.5 s, no more.
        const again = heldCall()
        void boundedCall(again.call, limits)
        const second = boundedCall(mine.call, limits).catch((error: unknown) => error)
        await advance(300)
        return second
      }),
    )
    await advance(0)
    await Bun.sleep(0)
    expect(holder.state).toBe('done')
    expect(outcome.value).toBeInstanceOf(StoreUnavailableError)
    expect((outcome.value as StoreUnavailableError).outcome).toBe('unchanged')
    expect(mine.sent.times).toBe(0)
  })
})
