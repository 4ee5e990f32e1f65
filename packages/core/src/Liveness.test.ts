import { describe, expect, test } from 'bun:test'
import { liveness } from './Liveness.ts'

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
