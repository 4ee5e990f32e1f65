/**
 * A preload (`bun --preload`) for bench/scale.ts's memory comparison: each `PRAGMA temp_store = MEMORY` a database of
 * Bun's SQLite runs becomes `PRAGMA temp_store = FILE` (SQLite's default before store-libsql's `open.ts` set MEMORY),
 * so the same checkout serves the same market with its statement journals and sort spill in temporary files. Each
 * rewrite appends the pragma's value then to the file `BENCH_TEMP_STORE_LOG`, so the bench can tell the store still
 * sets it; without that line the comparison would measure nothing.
 */
import { Database } from 'bun:sqlite'
import { appendFileSync } from 'node:fs'

const MEMORY = /^\s*PRAGMA\s+temp_store\s*=\s*(MEMORY|2)\s*;?\s*$/i
const log = process.env.BENCH_TEMP_STORE_LOG
const run = Database.prototype.run

Database.prototype.run = function (this: Database, sql: string, ...bindings: unknown[]) {
  if (typeof sql !== 'string' || !MEMORY.test(sql)) return Reflect.apply(run, this, [sql, ...bindings])
  const result = run.call(this, 'PRAGMA temp_store = FILE')
  const value = (this.query('PRAGMA temp_store').get() as { temp_store: number }).temp_store
  if (log) appendFileSync(log, `${this.filename} temp_store=${value}\n`)
  return result
} as typeof Database.prototype.run
