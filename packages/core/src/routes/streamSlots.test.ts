import { describe, expect, test } from 'bun:test'
import { streamSlots } from './streamSlots.ts'

describe('streamSlots', () => {
  test('behavior: a client gets perClient slots (IPv6 by its /64), all clients total; a release frees one, once', () => {
    const slots = streamSlots({ perClient: 2, total: 3 })
    const first = slots.open('198.51.100.1')
    slots.open('198.51.100.1')
    expect(() => slots.open('198.51.100.1')).toThrow('At most 2 live streams per client address')
    slots.open('2001:db8:1:2::1')
    expect(() => slots.open('2001:db8:1:2::2')).toThrow('The server holds its 3 live streams')
    first()
    first()
    expect(slots.size).toBe(2)
    expect(() => slots.open('2001:db8:1:2::2')).not.toThrow()
    expect(() => slots.open('2001:db8:1:2:ffff::9')).toThrow('per client address')
  })

  test('attack: the /64s of one IPv6 /48 hold at most 8 × perClient streams together; another /48 still opens', () => {
    const slots = streamSlots({ perClient: 10, total: 1_000 })
    for (let net = 1; net <= 8; net++)
      for (let host = 1; host <= 10; host++) slots.open(`2001:db8:1:${net}::${host}`)
    expect(() => slots.open('2001:db8:1:9::1')).toThrow('At most 80 live streams per IPv6 /48')
    expect(() => slots.open('2001:db8:2:1::1')).not.toThrow()
    expect(slots.size).toBe(81)
  })
})
