import { describe, expect, test } from 'bun:test'
import { median, percentile } from './percentile.ts'

describe('percentile', () => {
  test('behavior: the nearest-rank value, whatever the order of the samples', () => {
    const values = Array.from({ length: 100 }, (_, index) => 100 - index) // 100 … 1
    expect(percentile(values, 0.5)).toBe(50)
    expect(percentile(values, 0.99)).toBe(99)
    expect(percentile(values, 1)).toBe(100)
    expect(percentile([7, 3, 5], 0.99)).toBe(7)
    expect(percentile([], 0.5)).toBeNaN()
  })
})

describe('median', () => {
  test('behavior: the middle value, or the mean of the two middle ones', () => {
    expect(median([3, 1, 2])).toBe(2)
    expect(median([4, 1, 3, 2])).toBe(2.5)
  })
})
