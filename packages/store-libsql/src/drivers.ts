import type { Args, NativeDatabase, NativeStatement, RunInfo } from './connection.ts'
import { withFaultsClassified } from './faults.ts'

/** Where a database is: a file path or `:memory:` (local), or a remote URL. */
export type Location = { path: string; local: boolean }

/**
 * Which SQLite driver opens a database: `bun` (Bun's built-in SQLite, local databases on Bun only), `libsql`
 * (libsql-js, the engine under `@libsql/client`: Node.js and remote `libsql://` URLs), or `auto` (bun where it can).
 */
export type Driver = 'auto' | 'bun' | 'libsql'

/** A positional array spread, a named object as it is: how both drivers' statements take bind values. */
const spread = (args: Args): unknown[] => (Array.isArray(args) ? args : [args])

/** Bun's built-in SQLite (about 3 µs a primary-key read here, a quarter of libsql-js's). */
async function openBun(path: string): Promise<NativeDatabase> {
  const { Database } = await import('bun:sqlite')
  // strict: named parameters bind without their ':' prefix, as with libsql-js.
  const database = new Database(path, { create: true, strict: true })
  return {
    prepare(sql) {
      const statement = database.prepare(sql)
      return {
        get: (args) => statement.get(...(spread(args) as [])) ?? undefined,
        all: (args) => statement.all(...(spread(args) as [])),
        values: (args) => statement.values(...(spread(args) as [])) as unknown[][],
        run: (args) => statement.run(...(spread(args) as [])) as RunInfo,
      }
    },
    exec: (sql) => void database.run(sql),
    get inTransaction() {
      return database.inTransaction
    },
    close: () => database.close(),
  }
}

/** libsql-js: local files and `:memory:` on Node.js, and remote `libsql://` databases anywhere. */
async function openLibsql(path: string, authToken: string | undefined): Promise<NativeDatabase> {
  const { default: Libsql } = await import('libsql')
  const database = new Libsql(
    path,
    (authToken ? { authToken } : {}) as ConstructorParameters<typeof Libsql>[1],
  )
  return {
    prepare(sql) {
      const statement = database.prepare(sql)
      // libsql-js reads a lone object argument as named parameters, so bind values always go as one argument.
      const native: NativeStatement = {
        get: (args) => statement.raw(false).get(args),
        all: (args) => statement.raw(false).all(args),
        values: (args) => statement.raw(true).all(args) as unknown[][],
        run: (args) => statement.run(args) as RunInfo,
      }
      return native
    },
    exec: (sql) => void database.exec(sql),
    get inTransaction() {
      return database.inTransaction
    },
    close: () => database.close(),
  }
}

/** True when the host is Bun (its global is there); the store runs on Node.js too. */
const onBun = () => typeof (globalThis as { Bun?: unknown }).Bun !== 'undefined'

/**
 * Opens `location` with `driver`: on Bun a local database uses Bun's SQLite unless `libsql` is asked for; remote URLs
 * and Node.js use libsql-js. Both write the same SQLite file format and lock it the same way, so processes using
 * either share one database. A full disk and a lock held past the busy timeout come out as the API's 507 and 503
 * errors (faults.ts).
 * @example const native = await openNative({ path: 'data/market.db', local: true })
 */
export async function openNative(location: Location, authToken?: string, driver: Driver = 'auto') {
  const bun = driver === 'bun' || (driver === 'auto' && onBun() && location.local)
  if (bun && !location.local) throw new Error(`Bun's SQLite opens local databases only, not ${location.path}`)
  return withFaultsClassified(await (bun ? openBun(location.path) : openLibsql(location.path, authToken)))
}
