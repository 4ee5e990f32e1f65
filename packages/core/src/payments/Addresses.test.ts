import { describe, expect, test } from 'bun:test'
import { getAddress, InvalidAddressError, isAddressEqual } from 'viem'
import { checksummedAddress, lowerAddress, sameAddress } from './Addresses.ts'

const USDC = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'
const MALFORMED = [
  '0x833589fcd6edb6e08f4c7c32d4f71b54bda0291',
  '833589fcd6edb6e08f4c7c32d4f71b54bda02913',
  '0xzz',
]

describe('lowerAddress', () => {
  test('behavior: any case of an address lowers to the same form, again and again', () => {
    for (let round = 0; round < 2; round++) {
      expect(lowerAddress(USDC)).toBe('0x833589fcd6edb6e08f4c7c32d4f71b54bda02913')
      expect(lowerAddress(USDC.toUpperCase().replace('0X', '0x'))).toBe(lowerAddress(USDC))
    }
  })

  test('error: anything but 0x and 40 hex digits throws InvalidAddressError, as isAddressEqual does', () => {
    for (const address of MALFORMED) {
      expect(() => lowerAddress(address)).toThrow(InvalidAddressError)
      expect(() => isAddressEqual(address as never, USDC)).toThrow(InvalidAddressError)
    }
  })
})

describe('sameAddress', () => {
  test('behavior: agrees with isAddressEqual, whatever the case', () => {
    const other = '0x4200000000000000000000000000000000000006'
    for (const [a, b] of [
      [USDC, USDC.toLowerCase()],
      [USDC, other],
      [other, other],
    ] as const)
      expect(sameAddress(a, b)).toBe(isAddressEqual(a as never, b as never))
  })

  test('error: a malformed address on either side throws InvalidAddressError', () => {
    expect(() => sameAddress(USDC, '0x1234')).toThrow(InvalidAddressError)
    expect(() => sameAddress('0x1234', USDC)).toThrow(InvalidAddressError)
  })
})

describe('checksummedAddress', () => {
  test('behavior: the EIP-55 form viem makes, from any case, remembered past the memo size', () => {
    expect(checksummedAddress(USDC.toLowerCase())).toBe(USDC)
    for (let index = 0; index < 9_000; index++) {
      const address = `0x${index.toString(16).padStart(40, '0')}`
      expect(checksummedAddress(address)).toBe(getAddress(address))
    }
    expect(checksummedAddress(USDC)).toBe(USDC)
  })

  test('error: a malformed address throws InvalidAddressError, as getAddress does', () => {
    for (const address of MALFORMED) expect(() => checksummedAddress(address)).toThrow(InvalidAddressError)
  })
})
