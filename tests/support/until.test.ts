import { describe, expect, test } from 'bun:test'
import { eventually, until } from './until.ts'

describe('until', () => {
  test('behavior: resolves once the condition holds, sync or async, checking it again between sleeps', async () => {
    let checks = 0
    await until(() => ++checks >= 3, 'the third check')
    expect(checks).toBe(3)
    let asyncChecks = 0
    await until(async () => ++asyncChecks >= 2, 'the second async check', { everyMs: 1 })
    expect(asyncChecks).toBe(2)
  })

  test('error: a condition that never holds fails naming what was waited for', async () => {
    await expect(until(() => false, 'the webhook received', { timeoutMs: 20, everyMs: 1 })).rejects.toThrow(
      'until: the webhook received, not within 20 ms',
    )
  })
})

describe('eventually', () => {
  test('behavior: runs the assertions until they pass and answers their result', async () => {
    let tries = 0
    const answer = await eventually(
      () => {
        tries++
        expect(tries).toBe(3)
        return 'converged'
      },
      { everyMs: 1 },
    )
    expect(answer).toBe('converged')
    expect(tries).toBe(3)
  })

  test('error: assertions that never pass fail with their own last error', async () => {
    let tries = 0
    await expect(
      eventually(
        () => {
          tries++
          throw new Error(`read ${tries} still stale`)
        },
        { timeoutMs: 20, everyMs: 1 },
      ),
    ).rejects.toThrow(/^read \d+ still stale$/)
  })
})
