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
    // A write without an expiry keeps the row's; one with an expiry (a time or null) replaces it.
    put: (key, text, expiresAt) =>
      expiresAt === undefined
        ? sql`insert into kv (key, value) values (${key}, ${text})
            on conflict (key) do update set value = excluded.value`
        : sql`insert into kv (key, value, expires_at) values (${key}, ${text}, ${expiresAt})
            on conflict (key) do update set value = excluded.value, expires_at = excluded.expires_at`,
    remove: (key) => sql`delete from kv where key = ${key}`,
    insertIfAbsent: async (key, text, expiresAt) =>
      (
        await sql`insert into kv (key, value, expires_at) values (${key}, ${text}, ${expiresAt})
        on conflict do nothing`
      ).count,
    removeIfUnchanged: async (key, seen) =>
      (await sql`delete from kv where key = ${key} and value = ${seen}`).count,
    replaceIfUnchanged: async (key, seen, text, expiresAt) =>
      (expiresAt === undefined
        ? await sql`update kv set value = ${text} where key = ${key} and value = ${seen}`
        : await sql`update kv set value = ${text}, expires_at = ${expiresAt} where key = ${key} and value = ${seen}`
      ).count,
    // The outer condition is checked again on a row another node changed meanwhile (an expiry pushed forward).
    sweep: async (now, limit) =>
      (
        await sql`delete from kv where expires_at <= ${now} and key in (
        select key from kv where expires_at <= ${now} order by expires_at limit ${limit}
        for update skip locked)`
      ).count,
  })
}
