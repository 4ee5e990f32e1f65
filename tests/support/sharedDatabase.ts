import { type Client, createClient } from '@libsql/client'
import postgres from 'postgres'
import type { MigratedPostgres } from './postgres.ts'

/** A database several server processes share, as a test reads it behind their backs. */
export type SharedDatabase = {
  /** What the servers get as DATABASE_URL. */
  url: string
  /** Rows of a query; `?` placeholders take `args` in order. */
  rows(sql: string, args?: (string | number)[]): Promise<Record<string, unknown>[]>
  /**
   * Holds what a heartbeat of agent `nameKey` must wait for (SQLite: the database's write lock; PostgreSQL: the agent's
   * row) until the returned function releases it.
   */
  holdAgent(nameKey: string): Promise<() => Promise<void>>
  close(): Promise<void>
}

/** A libSQL file (created by the first server that opens it). */
export function sharedLibsqlFile(path: string): SharedDatabase {
  const url = `file:${path}`
  let client: Client | null = null
  // The servers' own writes hold the file's write lock now and then: wait for it (a busy timeout), never
  // fail at once (a failed BEGIN also left this test connection reading an old snapshot).
  const open = () => {
    client ??= createClient({ url, timeout: 10_000 })
    return client
  }
  return {
    url,
    async rows(sql, args = []) {
      return (await open().execute({ sql, args })).rows as unknown as Record<string, unknown>[]
    },
    async holdAgent() {
      const lock = await open().transaction('write')
      return () => lock.commit()
    },
    async close() {
      client?.close()
    },
  }
}

/** A fresh PostgreSQL database of `server` (migrated from its template). */
export async function sharedPostgres(server: MigratedPostgres): Promise<SharedDatabase> {
  const url = await server.freshUrl()
  // bigint (count(*), times) as numbers, as the store reads them.
  const sql = postgres(url, {
    max: 2,
    onnotice: () => {},
    types: { bigint: { to: 20, from: [20], serialize: String, parse: Number } },
  })
  return {
    url,
    async rows(text, args = []) {
      let index = 0
      return [
        ...(await sql.unsafe(
          text.replace(/\?/g, () => `$${++index}`),
          args,
        )),
      ]
    },
    async holdAgent(nameKey) {
      let release = () => {}
      let held = () => {}
      const locked = new Promise<void>((resolve) => {
        held = resolve
      })
      const done = sql.begin(async (tx) => {
        await tx`select 1 from agents where name_key = ${nameKey} for update`
        held()
        await new Promise<void>((resolve) => {
          release = resolve
        })
      })
      await locked
      return async () => {
        release()
        await done
      }
    },
    close: () => sql.end({ timeout: 1 }),
  }
}
