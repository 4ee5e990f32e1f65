import { StorageFullError, StoreUnavailableError } from '@agentmarket/core'
import type { NativeDatabase, NativeStatement } from './connection.ts'

/** SQLite's result code of a driver error (`SQLITE_FULL`, `SQLITE_BUSY_SNAPSHOT`…) with its message, for matching. */
const describe = (error: Error) => `${(error as { code?: unknown }).code ?? ''} ${error.message}`

/** True for SQLite's "database or disk is full" (a write that found no room; SQLite undid it). */
export const isDiskFull = (error: unknown): boolean =>
  error instanceof Error && /SQLITE_FULL|database or disk is full/i.test(describe(error))

/** True for SQLite's "database is locked" family: another connection held the lock past the busy timeout. */
export const isLocked = (error: unknown): boolean =>
  error instanceof Error &&
  /SQLITE_BUSY|SQLITE_LOCKED|database is locked|database table is locked/i.test(describe(error))

/** True for a lock another process holds, as the driver threw it or as `classifyFault` made it a 503. */
export const isBusy = (error: unknown): boolean =>
  (error instanceof StoreUnavailableError && isLocked(error.cause)) || isLocked(error)

/**
 * A driver error as the API answers it: a full disk is `StorageFullError` (507), a lock held past the busy timeout is
 * `StoreUnavailableError('unchanged')` (503: SQLite refuses the statement before it changes anything, and a COMMIT that
 * finds no room is undone whole). Anything else (a bug, a constraint) is returned as it is.
 */
export function classifyFault(error: unknown): unknown {
  if (error instanceof StorageFullError || error instanceof StoreUnavailableError) return error
  if (isDiskFull(error)) return new StorageFullError({ cause: error })
  if (isLocked(error)) return new StoreUnavailableError('unchanged', { cause: error, retryAfterSeconds: 1 })
  return error
}

/** True when `error` is a fault of the database itself (full, locked), not of the one write that met it. */
export const isDatabaseFault = (error: unknown): boolean =>
  error instanceof StorageFullError || error instanceof StoreUnavailableError

/** True for SQL whose success leaves a change on disk once no transaction is open (a commit, or a lone write). */
const lands = (sql: string) => /^\s*(COMMIT|END|INSERT|UPDATE|DELETE|REPLACE)\b/i.test(sql)

/**
 * `native` with every statement's errors classified: a full disk and a held lock reach the routes as 507 and 503
 * problems instead of 500s, wherever the statement was run from (a group commit, an update, a migration). Its
 * `storageFull` is true from a write that found the disk full until a write lands again.
 */
export function withFaultsClassified(native: NativeDatabase): NativeDatabase {
  let storageFull = false
  // One closure of one argument around each driver call (every one takes one): it runs on every statement.
  const noting =
    <Arg, Result>(call: (arg: Arg) => Result) =>
    (arg: Arg): Result => {
      try {
        return call(arg)
      } catch (error) {
        const fault = classifyFault(error)
        if (fault instanceof StorageFullError) storageFull = true
        throw fault
      }
    }
  return {
    prepare: noting((sql: string): NativeStatement => {
      const statement = native.prepare(sql)
      const run = noting(statement.run)
      return {
        get: noting(statement.get),
        all: noting(statement.all),
        values: noting(statement.values),
        run: lands(sql)
          ? (args) => {
              const info = run(args)
              if (!native.inTransaction) storageFull = false
              return info
            }
          : run,
      }
    }),
    exec: noting(native.exec),
    get inTransaction() {
      return native.inTransaction
    },
    get storageFull() {
      return storageFull
    },
    close: () => native.close(),
  }
}
