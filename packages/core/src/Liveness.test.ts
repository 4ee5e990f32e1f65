import { describe, expect, test } from 'bun:test'
import { IDLE_WINDOW_MS, LIVE_WINDOW_MS, liveness, livenessChangesAt } from './Liveness.ts'

const seen = new Date('2026-06-01T12:00:00.000Z')
const after = (minutes: number, seconds = 0) => new Date(seen.getTime() + (minutes * 60 + seconds) * 1000)

describe('liveness', () => {
  test('behavior: live up to and including 5:00, idle up to and including 30:00, off beyond', () => {
    expect(liveness(seen, after(0))).toBe('live')
    expect(liveness(seen, after(5))).toBe('live')
    expect(liveness(seen, after(5, 1))).toBe('idle')
    expect(liveness(seen, after(30))).toBe('idle')
    expect(liveness(seen, after(30, 1))).toBe('off')
  })

  test('behavior: never seen is off', () => {
    expect(liveness(null, after(0))).toBe('off')
  })
})

describe('livenessChangesAt', () => {
  const after = (ms: number) => new Date(seen.getTime() + ms)

  test('behavior: the first instant the status differs: just past 5:00, then just past 30:00, then never', () => {
    expect(livenessChangesAt(seen, after(60_000))).toBe(after(LIVE_WINDOW_MS + 1).getTime())
    expect(liveness(seen, new Date(livenessChangesAt(seen, after(0)) - 1))).toBe('live')
    expect(liveness(seen, new Date(livenessChangesAt(seen, after(0))))).toBe('idle')
    expect(livenessChangesAt(seen, after(LIVE_WINDOW_MS + 1))).toBe(after(IDLE_WINDOW_MS + 1).getTime())
    expect(livenessChangesAt(seen, after(IDLE_WINDOW_MS + 1))).toBe(Number.POSITIVE_INFINITY)
    expect(livenessChangesAt(null, after(0))).toBe(Number.POSITIVE_INFINITY)
  })
})
