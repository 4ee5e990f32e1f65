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

/** Formats base units as the shortest decimal string: 10000n -> "0.01". */
export function formatAmount(baseUnits: bigint): string {
  const whole = baseUnits / UNIT
  const fraction = (baseUnits % UNIT).toString().padStart(USDC_DECIMALS, '0').replace(/0+$/, '')
  return fraction ? `${whole}.${fraction}` : `${whole}`
}

/** The wire number for an amount; exact because prices have at most 6 decimals and 16 digits. */
export function amountToNumber(baseUnits: bigint): number {
  return Number(formatAmount(baseUnits))
}
