import { describe, expect, test } from 'bun:test'
import { connectionSlots, reserveOf } from './connectionSlots.ts'

describe('connectionSlots', () => {
  test('attack: addresses of one IPv6 /64 share one cap, another /64 has its own, an IPv4-mapped address counts as its IPv4', () => {
    const slots = connectionSlots({ perClient: 2, total: 100 })
    expect('release' in slots.take('2001:db8:1:2::1')).toBe(true)
    expect('release' in slots.take('2001:db8:1:2:ffff:ffff:ffff:ffff')).toBe(true)
    expect(slots.take('2001:0db8:0001:0002::abcd')).toEqual({ refused: expect.stringContaining('at most 2') })
    expect('release' in slots.take('2001:db8:1:3::1')).toBe(true)
    expect('release' in slots.take('::ffff:192.0.2.7')).toBe(true)
    expect('release' in slots.take('192.0.2.7')).toBe(true)
    expect(slots.take('192.0.2.7')).toEqual({ refused: expect.stringContaining('at most 2') })
  })

  test('behavior: the last tenth of the total is only for addresses holding none; a release gives a slot back once', () => {
    expect([reserveOf(1), reserveOf(10), reserveOf(100), reserveOf(101)]).toEqual([1, 1, 10, 11])
    const slots = connectionSlots({ perClient: 10, total: 10 })
    const held = Array.from({ length: 9 }, () => slots.take('198.51.100.1'))
    expect(held.every((slot) => 'release' in slot)).toBe(true)
    expect(slots.take('198.51.100.1')).toEqual({ refused: expect.stringContaining('holding none') })
    const newcomer = slots.take('198.51.100.2')
    expect('release' in newcomer).toBe(true)
    expect(slots.take('198.51.100.3')).toEqual({ refused: expect.stringContaining('Too many connections;') })
    expect(slots.size).toBe(10)
    if ('release' in newcomer) {
      newcomer.release()
      newcomer.release()
    }
    expect(slots.size).toBe(9)
    expect('release' in slots.take('198.51.100.3')).toBe(true)
  })

  test('attack: one IPv6 /48 opening 10 connections from each of 19 /64s takes at most 8 × 10, and senders elsewhere still connect', () => {
    const slots = connectionSlots({ perClient: 10, total: 100 })
    let held = 0
    for (let net = 1; net <= 19; net++)
      for (let host = 1; host <= 10; host++)
        if ('release' in slots.take(`2001:db8:1:${net.toString(16)}::${host.toString(16)}`)) held += 1
    expect(held).toBe(80)
    expect(slots.take('2001:db8:1:ff::1')).toEqual({ refused: expect.stringContaining('/48') })
    // Another site, another /48 of the same provider, loopback and IPv4 are all still admitted.
    for (const elsewhere of ['2001:db8:2:1::1', '2001:db8:3:1::1', '::1', '192.0.2.9'])
      expect('release' in slots.take(elsewhere)).toBe(true)
  })
})
