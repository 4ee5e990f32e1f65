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

  test('behavior: the number path gives the text and number of exact bigint arithmetic, at every size', () => {
    const unit = 1_000_000n
    // What formatAmount and amountToNumber must equal: the decimal written by bigint division, and its parse.
    const reference = (units: bigint) => {
      const fraction = (units % unit).toString().padStart(6, '0').replace(/0+$/, '')
      return fraction ? `${units / unit}.${fraction}` : `${units / unit}`
    }
    const edges = [0n, 1n, 9n, 10n, 999_999n, 1_000_000n, 1_000_001n, 10n ** 12n, 10n ** 12n - 1n]
    const top = BigInt(Number.MAX_SAFE_INTEGER)
    edges.push(top - 1n, top, top + 1n, top + 999_999n, 2n ** 64n + 123n)
    let seed = 0x2545f491
    const next = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
      return BigInt(seed)
    }
    for (let i = 0; i < 20_000; i++)
      edges.push((next() * 2n ** 31n + next()) % (top + 2n), next() % 10n ** 12n)
    for (const units of edges) {
      expect(formatAmount(units)).toBe(reference(units))
      expect(amountToNumber(units)).toBe(Number(reference(units)))
    }
  })
})
