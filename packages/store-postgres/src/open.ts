import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js'
import postgres, { type Sql } from 'postgres'
import { applyMigrations, type MigrationReport } from './migrate.ts'

/** How a node connects: its pool size and TLS (the URL's `sslmode` is read too). */
export type PostgresOptions = {
  /** Connections in this node's pool (default 10); one more is opened for LISTEN. */
  max?: number
  /**
   * TLS: `require` (encrypted, the server's certificate not checked), `verify-full` (encrypted and the certificate
   * checked against the system's CAs and the host name), or false (plain, for a database on the same host or a
   * private network). Default: as the URL's `sslmode` says, else false.
   */
  ssl?: 'require' | 'verify-full' | false
  /**
   * Named prepared statements per connection (default true); false for a pooler in transaction mode (PgBouncer),
   * which cannot keep them.
   */
  prepare?: boolean
  /** How long this pool waits for the database: connecting, each statement, idle and lifetime of a connection. */
  timeouts?: PoolTimeouts
}

/** The pool's timeouts; each has a default fit for a server's requests (POOL_TIMEOUTS). */
export type PoolTimeouts = {
  /** Milliseconds to open a connection (TCP, TLS and startup) before the call fails with CONNECT_TIMEOUT. */
  connectMs?: number
  /** Milliseconds PostgreSQL lets one statement run (its statement_timeout); 0 for no limit. */
  statementMs?: number
  /** Seconds an unused connection stays open: a connection that outlived a database restart is dropped soon. */
  idleSeconds?: number
  /** Seconds any connection lives at most before it is replaced. */
  lifetimeSeconds?: number
  /** Milliseconds each migration statement may run at this opening (statement_timeout in its transaction). */
  migrationMs?: number
  /**
   * Milliseconds a statement waits for a row or advisory lock before it fails and its transaction rolls back
   * (lock_timeout; 0 for no limit): a server sets its request bound, so a write its caller was already answered for is
   * not done late behind a lock, and a hot row's queue holds only work whose callers still wait.
   */
  lockMs?: number
}

/**
 * The timeouts a pool gets unless told otherwise: no statement limit; the server and `agentmarket copy` pass their
 * own, per kind of work (DATABASE_*_TIMEOUT_MS).
 */
export const POOL_TIMEOUTS: Required<PoolTimeouts> = {
  connectMs: 10_000,
  statementMs: 0,
  idleSeconds: 60,
  lifetimeSeconds: 600,
  migrationMs: 300_000,
  lockMs: 0,
}

/**
 * Seconds before reconnecting after the `retries`-th failed connection in a row: postgres.js's own grows to 20 s,
 * which kept a node failing for half a minute after its database was back. A call handed to a connection that is
 * reconnecting waits out this delay (a refused attempt does not fail the call; only one that hangs past the connect
 * timeout does), so it stays under a quarter second: at 1 s, calls sent just as the database came back took up to
 * 1.7 s more to fail or run (seen in a trace of the restart). Jittered, so many nodes retrying do not arrive together;
 * a refused connection costs the database next to nothing.
 */
const reconnectDelay = (retries: number) => (0.5 + Math.random() / 2) * Math.min(0.02 * 2 ** retries, 0.25)

/** An open, migrated PostgreSQL database, and what migrating it at this opening did. */
export type PostgresDatabase = {
  /** postgres.js's client: the pool, transactions (`sql.begin`) and LISTEN. */
  sql: Sql
  /** drizzle over that client. */
  db: PostgresJsDatabase
  /** This pool's application_name, unique per opening: the change notices of its own writes carry it. */
  nodeId: string
  migrations: MigrationReport
  close(): Promise<void>
}

/** PostgreSQL's type id of bigint (int8). */
const INT8 = 20

/** What drizzle calls on a postgres.js client or transaction: queries, and transactions and savepoints. */
type DrizzleClient = { unsafe: Sql['unsafe'] } & Record<string | symbol, unknown>

/**
 * `client` as drizzle calls it, with every query a named prepared statement: drizzle runs its queries through
 * postgres.js's `unsafe`, which parses and plans each one again unless told to prepare (a primary-key read: 100 µs
 * against 20 µs here). postgres.js keeps the statements per connection by their text; drizzle's texts are
 * parameterized, so they are few. Transactions and savepoints hand drizzle clients that prepare too.
 */
function preparing<Client extends object>(client: Client): Client {
  const wrapCallback = (args: unknown[]) => {
    const callback = args.at(-1) as (inner: object) => unknown
    return [...args.slice(0, -1), (inner: object) => callback(preparing(inner))]
  }
  return new Proxy(client, {
    get(target, property, receiver) {
      const inner = target as unknown as DrizzleClient
      if (property === 'unsafe')
        return (query: string, args?: unknown[], options?: object) =>
          inner.unsafe(query, args as never, { ...options, prepare: true })
      if (property === 'begin' || property === 'savepoint')
        return (...args: unknown[]) =>
          (inner[property] as (...all: unknown[]) => unknown)(...wrapCallback(args))
      return Reflect.get(target, property, receiver)
    },
  })
}

/** postgres.js's `ssl` option for our setting. */
function tlsOf(ssl: PostgresOptions['ssl']) {
  if (ssl === 'require') return 'require' as const
  if (ssl === 'verify-full') return 'verify-full' as const
  return ssl === false ? false : undefined
}

/**
 * Opens a PostgreSQL database (`postgres://…` or `postgresql://…`) with a pool, and applies pending migrations
 * (nodes starting together take turns). bigint columns (times in ms, amounts in base units) read as JS numbers: all
 * stay far below 2^53.
 * @example const database = await openPostgres('postgres://market@db.internal/market', { max: 20 })
 */
export async function openPostgres(url: string, options: PostgresOptions = {}): Promise<PostgresDatabase> {
  const ssl = tlsOf(options.ssl)
  const nodeId = `agentmarket-${crypto.randomUUID()}`
  const timeouts = { ...POOL_TIMEOUTS, ...options.timeouts }
  const sql = postgres(url, {
    connection: {
      application_name: nodeId,
      statement_timeout: timeouts.statementMs,
      lock_timeout: timeouts.lockMs,
    },
    connect_timeout: timeouts.connectMs / 1000,
    idle_timeout: timeouts.idleSeconds,
    max_lifetime: timeouts.lifetimeSeconds,
    backoff: reconnectDelay,
    max: options.max ?? 10,
    prepare: options.prepare ?? true,
    ...(ssl === undefined ? {} : { ssl }),
    onnotice: () => {},
    types: {
      bigint: { to: INT8, from: [INT8], serialize: (value: number) => String(value), parse: Number },
    },
  })
  try {
    const migrations = await applyMigrations(sql, { statementMs: timeouts.migrationMs })
    return { sql, db: drizzle(preparing(sql)), nodeId, migrations, close: () => sql.end({ timeout: 5 }) }
  } catch (error) {
    await sql.end({ timeout: 1 })
    throw error
  }
}
