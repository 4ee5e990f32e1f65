import { describe, expect, test } from 'bun:test'
import { chainBudgetExpiry, chainCallTimeout, inChainBudget } from './chainBudget.ts'

/** A clock the test moves by hand. */
function handClock(start = 1_000) {
  let now = start
  return { now: () => now, advance: (ms: number) => (now += ms) }
}

describe('one chain budget per request', () => {
  test('behavior: the bounds given to the chain calls of one request add up to its budget at most, whatever their number', async () => {
    const clock = handClock()
    const given: number[] = []
    await inChainBudget(
      2_500,
      async () => {
        // Each call runs to its bound (a frozen RPC): the clock moves by what it was given.
        for (let call = 0; call < 10; call++) {
          const bound = chainCallTimeout(1_000)
          given.push(bound)
          clock.advance(bound)
        }
      },
      clock.now,
    )
    expect(given).toEqual([1_000, 1_000, 500, 0, 0, 0, 0, 0, 0, 0])
    expect(given.reduce((sum, bound) => sum + bound, 0)).toBeLessThanOrEqual(2_500)
  })

  test('behavior: outside any budget (background passes) each call keeps its own bound', () => {
    expect(chainCallTimeout(10_000)).toBe(10_000)
    expect(chainBudgetExpiry()).toBeNull()
  })

  test('behavior: a request that runs another action spends one budget, not two', async () => {
    const clock = handClock()
    const bounds = await inChainBudget(
      1_000,
      async () => {
        clock.advance(700)
        return inChainBudget(1_000, async () => chainCallTimeout(10_000), clock.now)
      },
      clock.now,
    )
    expect(bounds).toBe(300)
  })

  test('behavior: once the budget is spent its expiry has come and no call is given time', async () => {
    const clock = handClock()
    const after = await inChainBudget(
      100,
      async () => {
        clock.advance(150)
        await chainBudgetExpiry()
        return chainCallTimeout(10_000)
      },
      clock.now,
    )
    expect(after).toBe(0)
  })

  test('behavior: the one timer of a budget is cleared when its request ends, made before its first wait or after', async () => {
    const made: unknown[] = []
    const cleared: unknown[] = []
    const { setTimeout: set, clearTimeout: clear } = globalThis
    globalThis.setTimeout = ((...args: Parameters<typeof set>) => {
      const timer = set(...args)
      made.push(timer)
      return timer
    }) as typeof set
    globalThis.clearTimeout = ((timer: Parameters<typeof clear>[0]) => {
      cleared.push(timer)
      clear(timer)
    }) as typeof clear
    try {
      await inChainBudget(60_000, async () => {
        void chainBudgetExpiry()
      })
      await inChainBudget(60_000, async () => {
        await Promise.resolve()
        void chainBudgetExpiry()
      })
      // A timer made after the work first waited is cleared by a reaction added after this test's own.
      for (let turn = 0; turn < 10 && cleared.length < made.length; turn++) await Promise.resolve()
    } finally {
      globalThis.setTimeout = set
      globalThis.clearTimeout = clear
    }
    expect(made).toHaveLength(2)
    // The very timers made (timers of one shape are equal as values).
    expect(made.map((timer) => cleared.includes(timer))).toEqual([true, true])
  })
})
