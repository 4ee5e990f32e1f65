import { describe, expect, test } from 'bun:test'
import { amountToNumber, formatAmount, toBaseUnits } from './Money.ts'

describe('toBaseUnits', () => {
  test('behavior: decimal strings and JSON numbers become exact base units', () => {
    expect(toBaseUnits('0.01')).toBe(10_000n)
    expect(toBaseUnits(0.01)).toBe(10_000n)
    expect(toBaseUnits(0.3)).toBe(300_000n)
    expect(toBaseUnits('1.5')).toBe(1_500_000n)
    expect(toBaseUnits(0.000001)).toBe(1n)
    expect(toBaseUnits(1_000_000)).toBe(1_000_000_000_000n)
    expect(toBaseUnits('0')).toBe(0n)
    expect(toBaseUnits('123456789.123456')).toBe(123_456_789_123_456n)
  })

  test('error: more than 6 decimals, signs, exponents, padding and non-numbers are refused', () => {
    for (const bad of [
      '0.0000001',
      1e-7,
      '-1',
      -1,
      '1e3',
      1e21,
      '01',
      '.5',
      '5.',
      ' 1',
      '1,5',
      '',
      'abc',
      Number.NaN,
      Infinity,
    ]) {
      expect(toBaseUnits(bad as string | number)).toBeNull()
    }
  })
})

describe('formatAmount', () => {
  test('behavior: shortest decimal text, and the wire number equals the literal', () => {
    expect(formatAmount(10_000n)).toBe('0.01')
    expect(formatAmount(1_500_000n)).toBe('1.5')
    expect(formatAmount(2_000_000n)).toBe('2')
    expect(formatAmount(1n)).toBe('0.000001')
    expect(amountToNumber(300_000n)).toBe(0.3)
    expect(amountToNumber(123_456_789_123_456n)).toBe(123456789.123456)
  })
})
