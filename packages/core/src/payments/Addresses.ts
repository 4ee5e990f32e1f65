import { type Address, checksumAddress, InvalidAddressError } from 'viem'

/** What viem's isAddressEqual accepts: 0x and 40 hex digits, in any case (the checksum is not checked). */
const ADDRESS = /^0x[0-9a-fA-F]{40}$/

/** How many forms each memo keeps before it starts again: a receipt's addresses repeat (the token, the buyers). */
const KEPT = 8_192
/** Lowercase forms by the address as written. */
const lowered = new Map<string, Address>()
/** Checksummed forms by lowercase form. */
const checksums = new Map<string, Address>()

/** Remembers `value` for `key` in `memo`, emptied first when full; answers `value`. */
function remember(memo: Map<string, Address>, key: string, value: Address): Address {
  if (memo.size >= KEPT) memo.clear()
  memo.set(key, value)
  return value
}

/**
 * The lowercase form of an address, the one comparisons use (remembered: lowering a checksummed address allocates
 * a string, a lookup does not); throws viem's InvalidAddressError for anything else, as isAddressEqual does.
 * @example lowerAddress('0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913') // '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913'
 */
export function lowerAddress(address: string): Address {
  const known = lowered.get(address)
  if (known) return known
  if (!ADDRESS.test(address)) throw new InvalidAddressError({ address })
  return remember(lowered, address, address.toLowerCase() as Address)
}

/** Whether two addresses are the same, whatever their case; throws InvalidAddressError as isAddressEqual does. */
export function sameAddress(a: string, b: string): boolean {
  return lowerAddress(a) === lowerAddress(b)
}

/**
 * The EIP-55 checksummed form of an address, as viem's getAddress makes it, remembered for the next receipts (the
 * hash it takes costs microseconds; a lookup, nanoseconds). Throws InvalidAddressError for anything else.
 * @example checksummedAddress('0x833589fcd6edb6e08f4c7c32d4f71b54bda02913') // '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'
 */
export function checksummedAddress(address: string): Address {
  const lower = lowerAddress(address)
  return checksums.get(lower) ?? remember(checksums, lower, checksumAddress(lower))
}
