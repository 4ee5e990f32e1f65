import type { RateBuckets, Store } from '@agentmarket/core'
import type { Settings } from './env.ts'

/** The market's database as the server uses it, whichever store DATABASE_URL names. */
export type MarketDatabase = {
  /** `postgres` for a postgres:// or postgresql:// URL, else `libsql` (files, :memory:, libsql://). */
  kind: 'libsql' | 'postgres'
  store: Store
  /** Token buckets every process (node) on this database shares. */
  rateBuckets: RateBuckets
  /** What migrating it at this opening did: the migrations applied (their numbers) and how many are known. */
  migrations: { applied: number[]; known: number }
  /**
   * Whether `error` (thrown outside any call, from the driver's own timers or sockets) is a fault of the database's
   * connection, which the pool recovers from: the process logs it and lives on.
   */
  isDriverFault(error: unknown): boolean
  /** Closes the store and its connections. */
  close(): Promise<void>
}

/**
 * A database URL fit to print: its password (PostgreSQL URLs carry one) replaced by `***`, and its query string
 * (`?authToken=…`, `?password=…`) dropped.
 */
export function printableDatabaseUrl(url: string): string {
  if (!URL.canParse(url) || url.startsWith('file:')) return url
  const parsed = new URL(url)
  if (parsed.password) parsed.password = '***'
  parsed.search = ''
  return parsed.href
}

/** True for a PostgreSQL URL (`postgres://…`, `postgresql://…`). */
export const isPostgresUrl = (url: string): boolean => /^postgres(ql)?:\/\//i.test(url)

/** The PostgreSQL store, its module loaded only for a PostgreSQL URL. */
async function openPostgresMarket(settings: Settings): Promise<MarketDatabase> {
  const { classifyPostgresFault, openPostgres, postgresRateBuckets, postgresStore } = await import(
    '@agentmarket/store-postgres'
  )
  const tls = settings.databaseTls
  const { connectMs, requestMs, searchMs, backgroundMs, migrationMs } = settings.databaseTimeouts
  const database = await openPostgres(settings.databaseUrl, {
    max: settings.databasePoolSize,
    ...(tls === undefined ? {} : { ssl: tls === 'off' ? false : tls }),
    // PostgreSQL ends a statement past the longest deadline; the store answers each kind's own sooner (faults.ts).
    // A statement waits for a lock at most a request's bound: past it its caller was answered, and the work would be
    // done late for no one (the crash test's hot agent row under load: 14 statements queued on one lock for 7 s).
    timeouts: {
      connectMs,
      statementMs: Math.max(requestMs, searchMs, backgroundMs),
      migrationMs,
      lockMs: requestMs,
    },
  })
  const store = await postgresStore(database, { deadlines: { requestMs, searchMs, backgroundMs } })
  return {
    kind: 'postgres',
    store,
    rateBuckets: postgresRateBuckets(database, { deadlineMs: requestMs }),
    migrations: database.migrations,
    isDriverFault: (error) => classifyPostgresFault(error, { wrote: false }) !== null,
    close: () => store.close(),
  }
}

/** The libSQL store: a file, :memory:, or a remote libsql:// database. */
async function openLibsqlMarket(settings: Settings): Promise<MarketDatabase> {
  const { libsqlRateBuckets, libsqlStore, openDatabase } = await import('@agentmarket/store-libsql')
  const database = await openDatabase(settings.databaseUrl, settings.databaseAuthToken, 'auto', {
    ms: settings.databaseLockWaitSeconds * 1000,
    // One plain line on stderr at once, as the start's other errors: the log may not be read until the wait is over.
    onLocked: (message) => console.error(`agentmarket: ${message} (DATABASE_LOCK_WAIT_SECONDS)`),
  })
  const store = libsqlStore(database)
  return {
    kind: 'libsql',
    store,
    rateBuckets: libsqlRateBuckets(database),
    migrations: database.migrations,
    isDriverFault: () => false,
    close: () => store.close(),
  }
}

/**
 * Opens the database DATABASE_URL names, migrated: PostgreSQL for many nodes on one database, libSQL otherwise.
 * @example const { store, rateBuckets, close } = await openMarketDatabase(readSettings(process.env))
 */
export function openMarketDatabase(settings: Settings): Promise<MarketDatabase> {
  return isPostgresUrl(settings.databaseUrl) ? openPostgresMarket(settings) : openLibsqlMarket(settings)
}
