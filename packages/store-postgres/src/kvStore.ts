import type { KvStore } from '@agentmarket/core'
import { kvMethods } from '@agentmarket/store-sql'
import type { PostgresDatabase } from './open.ts'

/**
 * The key-value methods of the PostgreSQL Store (store-sql kvStore.ts: compare-and-set updates, so they hold across
 * every node without a lock held between two round trips), as postgres.js templates.
 */
export function kvStore({ sql }: PostgresDatabase): KvStore {
  return kvMethods({
    read: async (key) =>
      (await sql<{ value: string }[]>`select value from kv where key = ${key}`)[0]?.value ?? null,
    put: (key, text) => sql`insert into kv (key, value) values (${key}, ${text})
      on conflict (key) do update set value = excluded.value`,
    remove: (key) => sql`delete from kv where key = ${key}`,
    insertIfAbsent: async (key, text) =>
      (await sql`insert into kv (key, value) values (${key}, ${text}) on conflict do nothing`).count,
    removeIfUnchanged: async (key, seen) =>
      (await sql`delete from kv where key = ${key} and value = ${seen}`).count,
    replaceIfUnchanged: async (key, seen, text) =>
      (await sql`update kv set value = ${text} where key = ${key} and value = ${seen}`).count,
  })
}
