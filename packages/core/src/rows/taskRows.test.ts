import { describe, expect, spyOn, test } from 'bun:test'
import { sampleTask } from '../testing/fixtures.ts'
import { toTaskRecord, toTaskRow } from './taskRows.ts'

const kept = { status: 201, body: { task_id: 'task_1', status: 'paid', payment: { amount: 1 } } }
const keyedRow = () =>
  toTaskRow(
    sampleTask({ params: null, idempotency: { key: 'k-1', fingerprint: 'f', status: 201, body: kept.body } }),
  )

describe('a task row read as its record', () => {
  test('work: a keyed task is read without parsing its kept answer; the answer parses once, when first read', () => {
    const row = keyedRow()
    const parse = spyOn(JSON, 'parse')
    try {
      const record = toTaskRecord(row, 'seller')
      expect(parse).toHaveBeenCalledTimes(0)
      expect(record.idempotency?.body).toEqual(kept.body)
      expect(record.idempotency?.body).toBe(record.idempotency?.body)
      expect(parse).toHaveBeenCalledTimes(1)
    } finally {
      parse.mockRestore()
    }
  })

  test('behavior: the record written back keeps the kept answer as it was', () => {
    const row = keyedRow()
    expect(toTaskRow(toTaskRecord(row, 'seller')).firstBody).toBe(row.firstBody)
  })
})
