import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { StoreUnavailableError } from '@agentmarket/core'
import { connectionOver } from './connection.ts'
import { type Driver, openNative } from './drivers.ts'

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-faults-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

/** A connection to the file `name` by `driver`, waiting at most `busyMs` on another connection's lock. */
async function connect(driver: Driver, name: string, busyMs: number) {
  const connection = connectionOver(
    await openNative({ path: join(folder, name), local: true }, undefined, driver),
  )
  connection.exec(`PRAGMA busy_timeout = ${busyMs}`)
  return connection
}

for (const driver of ['bun', 'libsql'] as const) {
  describe(`driver faults (${driver})`, () => {
    test('behavior: a write refused by a lock another connection holds throws StoreUnavailableError (nothing changed); once let go it lands', async () => {
      const name = `locked-${driver}.db`
      const holder = await connect(driver, name, 0)
      holder.exec('PRAGMA journal_mode = WAL')
      holder.exec('create table t (id integer primary key)')
      const writer = await connect(driver, name, 0)
      holder.exec('BEGIN EXCLUSIVE')
      const refused = await writer
        .commitTogether(() => writer.run('insert into t (id) values (1)'))
        .catch((error) => error)
      expect(refused).toBeInstanceOf(StoreUnavailableError)
      expect((refused as StoreUnavailableError).outcome).toBe('unchanged')
      // Reads go on (WAL) and show nothing of it.
      expect(writer.values('select count(*) from t')[0]?.[0]).toBe(0)
      holder.exec('ROLLBACK')
      await writer.commitTogether(() => writer.run('insert into t (id) values (1)'))
      expect(writer.values('select count(*) from t')[0]?.[0]).toBe(1)
      holder.close()
      writer.close()
    })

    test('error: a bug (a broken constraint, bad SQL) is not a fault of the database: it stays the driver error (a 500)', async () => {
      const connection = await connect(driver, `bug-${driver}.db`, 0)
      connection.exec('create table t (id integer primary key)')
      connection.run('insert into t (id) values (1)')
      const duplicate = await connection
        .commitTogether(() => connection.run('insert into t (id) values (1)'))
        .catch((error) => error)
      expect(duplicate).not.toBeInstanceOf(StoreUnavailableError)
      expect(String(duplicate)).toMatch(/UNIQUE|PRIMARY KEY/i)
      expect(() => connection.run('select * from no_such_table')).toThrow(/no such table/)
      connection.close()
    })
  })
}
