import { describe, expect, test } from 'bun:test'
import { until } from './until.ts'

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
