import { describe, expect, test } from 'bun:test'
import { groupCommit } from './groupCommit.ts'

describe('groupCommit', () => {
  test('behavior: writes of one turn, and writes arriving during a commit, go together; each gets its answer', async () => {
    const batches: number[][] = []
    const write = groupCommit(async (items: number[]) => {
      batches.push(items)
      await Bun.sleep(5)
      return items.map((item) => item * 10)
    })
    const first = Promise.all([1, 2, 3].map(write))
    await Bun.sleep(1) // the first commit is running now
    const second = Promise.all([4, 5].map(write))
    expect(await first).toEqual([10, 20, 30])
    expect(await second).toEqual([40, 50])
    expect(batches).toEqual([
      [1, 2, 3],
      [4, 5],
    ])
    expect(await write(6)).toBe(60)
    expect(batches.at(-1)).toEqual([6])
  })

  test('error: a failed commit rejects its own batch only', async () => {
    const write = groupCommit(async (items: number[]) => {
      await Bun.sleep(1)
      if (items.includes(2)) throw new Error('disk full')
      return items
    })
    expect(await write(1)).toBe(1)
    const outcomes = await Promise.allSettled([write(2), write(3)])
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected'])
    expect(await write(4)).toBe(4)
  })
})
