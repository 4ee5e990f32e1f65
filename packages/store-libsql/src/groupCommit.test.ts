import { describe, expect, test } from 'bun:test'
import { groupCommit } from './groupCommit.ts'

describe('groupCommit', () => {
  test('behavior: writes arriving during a commit go together in the next one; each gets its own answer', async () => {
    const batches: number[][] = []
    const write = groupCommit(async (items: number[]) => {
      batches.push(items)
      await Bun.sleep(5)
      return items.map((item) => item * 10)
    })
    const answers = await Promise.all([1, 2, 3, 4].map(write))
    expect(answers).toEqual([10, 20, 30, 40])
    expect(batches).toEqual([[1], [2, 3, 4]])
    expect(await write(5)).toBe(50)
    expect(batches.at(-1)).toEqual([5])
  })

  test('error: a failed commit rejects its own batch only', async () => {
    const write = groupCommit(async (items: number[]) => {
      await Bun.sleep(1)
      if (items.includes(2)) throw new Error('disk full')
      return items
    })
    const outcomes = await Promise.allSettled([write(1), write(2), write(3)])
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'rejected'])
    expect(await write(4)).toBe(4)
  })
})
