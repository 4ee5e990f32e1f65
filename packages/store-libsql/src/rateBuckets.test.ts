import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { rateBucketsSuite } from '@agentmarket/core/testing'
import { openDatabase } from './open.ts'
import { libsqlRateBuckets } from './rateBuckets.ts'

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-buckets-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))
let fileNumber = 0

rateBucketsSuite({ describe, test }, 'libsqlRateBuckets on a file', async () =>
  libsqlRateBuckets(await openDatabase(`file:${join(folder, `buckets-${fileNumber++}.db`)}`)),
)

describe('libsqlRateBuckets', () => {
  test('behavior: two connections to one file share each bucket exactly', async () => {
    const url = `file:${join(folder, 'shared.db')}`
    const first = await openDatabase(url)
    const second = await openDatabase(url)
    const policy = { name: 'register', limit: 25, windowSeconds: 3600 }
    const now = Date.now()
    const takes = Array.from({ length: 40 }, (_, i) =>
      libsqlRateBuckets(i % 2 === 0 ? first : second).take('register:a:192.0.2.1', policy, 1, now),
    )
    const answers = await Promise.all(takes)
    expect(answers.filter((answer) => answer.allowed)).toHaveLength(25)
    expect(answers.find((answer) => !answer.allowed)?.retryAfterSeconds).toBe(144)
    first.close()
    second.close()
  })
})
