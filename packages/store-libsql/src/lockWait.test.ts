import { Database as BunDatabase } from 'bun:sqlite'
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { StoreUnavailableError } from '@agentmarket/core'
import { sampleAgent, storeSuite } from '@agentmarket/core/testing'
import { connectionOver, type NativeDatabase, type NativeStatement } from './connection.ts'
import { openNative } from './drivers.ts'
import { classifyFault } from './faults.ts'
import { libsqlStore } from './libsqlStore.ts'
import { openDatabase } from './open.ts'

// A write lock held by another process is waited for on timers, never inside SQLite's busy handler, which would hold
// the event loop and every other request with it (issue 39, attack F2).
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-lock-wait-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))
let fileNumber = 0

/** Statements that need the write lock when no transaction is open: a transaction's start, or a lone write. */
const takesWriteLock = (sql: string) => /^\s*(BEGIN IMMEDIATE|INSERT|UPDATE|DELETE|REPLACE)\b/i.test(sql)

/**
 * `native` as if another process took the write lock between any two of this connection's writes: every other
 * statement that needs the lock fails at once with SQLite's "database is locked", as it does with no busy timeout.
 */
function contended(native: NativeDatabase): NativeDatabase & { refused: number } {
  let refuseNext = true
  let refused = 0
  const lockTaking = <Call extends (...args: never[]) => unknown>(sql: string, call: Call): Call =>
    ((...args: Parameters<Call>) => {
      if (takesWriteLock(sql) && !native.inTransaction) {
        refuseNext = !refuseNext
        if (!refuseNext) {
          refused++
          throw classifyFault(Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }))
        }
      }
      return call(...args)
    }) as Call
  return {
    prepare(sql: string): NativeStatement {
      const statement = native.prepare(sql)
      return {
        get: lockTaking(sql, (args) => statement.get(args)),
        all: lockTaking(sql, (args) => statement.all(args)),
        values: lockTaking(sql, (args) => statement.values(args)),
        run: lockTaking(sql, (args) => statement.run(args)),
      }
    },
    exec: (sql) => native.exec(sql),
    get inTransaction() {
      return native.inTransaction
    },
    get storageFull() {
      return native.storageFull
    },
    close: () => native.close(),
    get refused() {
      return refused
    },
  }
}

/** A store over a migrated file whose every write finds the lock held once before it gets it. */
async function contendedStore() {
  const path = join(folder, `contended-${fileNumber++}.db`)
  const migrated = await openDatabase(`file:${path}`)
  migrated.close()
  const native = contended(await openNative({ path, local: true }))
  const connection = connectionOver(native)
  connection.exec('PRAGMA busy_timeout = 0')
  const store = libsqlStore({
    connection,
    db: connection.db,
    migrations: migrated.migrations,
    close: connection.close,
  })
  return { store, native }
}

// Derived from the Store contract: every case of every part of the Store passes though each write meets a held lock
// first, so a write path added later without the timer wait fails here with a 503.
storeSuite({ describe, test }, 'libsqlStore whose writes each find the lock held once', async () => {
  const { store } = await contendedStore()
  return store
})

describe('a write lock held by another process', () => {
  test('behavior: the contended store really met held locks (the suite above is not vacuous)', async () => {
    const { store, native } = await contendedStore()
    await store.insertAgent(sampleAgent({ name: 'contended' }), [])
    expect(native.refused).toBeGreaterThan(0)
    expect((await store.getAgent('contended'))?.name).toBe('contended')
    await store.close()
  })

  test('behavior: a write waits for it with the event loop free (other work runs meanwhile), then lands once it is let go', async () => {
    const path = join(folder, `held-${fileNumber++}.db`)
    const database = await openDatabase(`file:${path}`)
    const store = libsqlStore(database)
    const holder = new BunDatabase(path)
    holder.run('BEGIN IMMEDIATE')
    let settled = false
    const write = store.insertAgent(sampleAgent({ name: 'waited' }), []).finally(() => {
      settled = true
    })
    // A turn of the event loop runs while the write waits: SQLite's busy handler would have held it for the wait.
    await new Promise((resolve) => setImmediate(resolve))
    expect(settled).toBe(false)
    holder.run('ROLLBACK')
    await write
    expect((await store.getAgent('waited'))?.name).toBe('waited')
    holder.close()
    await store.close()
  })

  test('error: held past the wait, a write answers 503 database_unavailable (nothing changed) and writes nothing', async () => {
    const path = join(folder, `kept-${fileNumber++}.db`)
    const store = libsqlStore(await openDatabase(`file:${path}`))
    const holder = new BunDatabase(path)
    holder.run('BEGIN IMMEDIATE')
    const error = await store.insertAgent(sampleAgent({ name: 'refused' }), []).catch((caught) => caught)
    expect(error).toBeInstanceOf(StoreUnavailableError)
    expect((error as StoreUnavailableError).outcome).toBe('unchanged')
    holder.run('ROLLBACK')
    expect(await store.getAgent('refused')).toBeNull()
    holder.close()
    await store.close()
  })
})
