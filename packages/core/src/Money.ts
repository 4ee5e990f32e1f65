import { withoutTrailing } from './Trim.ts'

/** USDC has 6 decimals; every amount inside the core is a bigint of 10^-6 USDC. */
export const USDC_DECIMALS = 6

const UNIT = 10n ** BigInt(USDC_DECIMALS)
/** The largest price a skill may carry: 1,000,000 USDC. */
export const MAX_PRICE_BASE_UNITS = 1_000_000n * UNIT
const DECIMAL = /^(0|[1-9]\d{0,15})(?:\.(\d{1,6}))?$/

/**
 * Parses a decimal amount (a JSON number or a string) into base units, without floats.
 * Returns null for anything that is not a plain non-negative decimal with at most 6 decimals.
 * @example toBaseUnits('0.01') // 10000n
 */
export function toBaseUnits(amount: string | number): bigint | null {
  // A JSON number reaches us as a double; its shortest round-trip text is the literal the client sent
  // for any value with at most 6 decimals, and exponent forms (1e-7, 1e+21) are rejected below.
  const text = typeof amount === 'number' ? (Number.isFinite(amount) ? String(amount) : '') : amount
  const match = DECIMAL.exec(text)
  if (!match) return null
  const whole = BigInt(match[1] ?? '0')
  const fraction = BigInt((match[2] ?? '').padEnd(USDC_DECIMALS, '0'))
  return whole * UNIT + fraction
}

// Amounts a double holds exactly (every price and payment: at most 10^12 base units) are formatted with number
// arithmetic, a tenth of the cost of bigint division and printing; larger or negative ones take the bigint path.
const EXACT_LIMIT = BigInt(Number.MAX_SAFE_INTEGER)
const UNIT_NUMBER = 10 ** USDC_DECIMALS

/** A fraction of a unit (1 to 999,999 base units) as six digits without trailing zeros: 1 -> "000001", 500000 -> "5". */
const fractionDigits = (fraction: number | bigint) =>
  withoutTrailing(fraction.toString().padStart(USDC_DECIMALS, '0'), '0')

/** Formats base units as the shortest decimal string: 10000n -> "0.01". */
export function formatAmount(baseUnits: bigint): string {
  if (baseUnits >= 0n && baseUnits <= EXACT_LIMIT) {
    const units = Number(baseUnits)
    const fraction = units % UNIT_NUMBER
    const whole = (units - fraction) / UNIT_NUMBER
    return fraction === 0 ? `${whole}` : `${whole}.${fractionDigits(fraction)}`
  }
  const whole = baseUnits / UNIT
  const fraction = fractionDigits(baseUnits % UNIT)
  return fraction ? `${whole}.${fraction}` : `${whole}`
}

/** The wire number for an amount; exact because prices have at most 6 decimals and 16 digits. */
export function amountToNumber(baseUnits: bigint): number {
  // One correctly rounded division gives the double nearest the exact quotient, the decimal formatAmount writes,
  // which is also what Number() of that text rounds to.
  if (baseUnits >= 0n && baseUnits <= EXACT_LIMIT) return Number(baseUnits) / UNIT_NUMBER
  return Number(formatAmount(baseUnits))
}
