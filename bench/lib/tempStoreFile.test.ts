import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runToEnd } from '../../tests/support/process.ts'

// scale.ts compares bun start's memory with SQLite's temporary files in memory (as shipped) and in files (this preload).
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-temp-store-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

/** The temp_store of a database store-libsql opens in a child process, with the preload or without. */
async function tempStoreOpened(file: string, preload: boolean) {
  const log = join(folder, 'temp-store.log')
  const script = `const { openDatabase } = await import(${JSON.stringify(join(import.meta.dir, '../../packages/store-libsql/src/index.ts'))})
const database = await openDatabase('file:${file}')
console.log(JSON.stringify(database.connection.values('PRAGMA temp_store')))
database.close()`
  const preloading = preload ? ['--preload', join(import.meta.dir, 'tempStoreFile.ts')] : []
  const { exitCode, stdout, stderr } = await runToEnd(['bun', ...preloading, '-e', script], {
    env: { PATH: process.env.PATH ?? '', BENCH_TEMP_STORE_LOG: log },
  })
  expect(exitCode, stderr).toBe(0)
  const record = (() => {
    try {
      return readFileSync(log, 'utf8')
    } catch {
      return ''
    }
  })()
  return { value: JSON.parse(stdout.trim()) as number[][], record }
}

test('behavior: as shipped, the store keeps temporary files in memory (temp_store 2)', async () => {
  const { value, record } = await tempStoreOpened(join(folder, 'shipped.db'), false)
  expect(value).toEqual([[2]])
  expect(record).not.toContain('shipped.db')
})

test('behavior: under the preload, the same opening keeps them in files (1) and records it', async () => {
  const file = join(folder, 'files.db')
  const { value, record } = await tempStoreOpened(file, true)
  expect(value).toEqual([[1]])
  expect(record.split('\n')).toContain(`${file} temp_store=1`)
})
