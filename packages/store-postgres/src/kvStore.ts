import type { KvStore } from '@agentmarket/core'
import { type KvConditionalWrite, kvMethods } from '@agentmarket/store-sql'
import type { PostgresDatabase } from './open.ts'

/** SQLSTATE division_by_zero: how writeAll's statement undoes itself when an entry changed since it was read. */
const DIVISION_BY_ZERO = '22012'

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
    writeAll: (writes) => writeAll(sql, writes),
    // The outer condition is checked again on a row another node changed meanwhile (an expiry pushed forward).
    sweep: async (now, limit) =>
      (
        await sql`delete from kv where expires_at <= ${now} and key in (
        select key from kv where expires_at <= ${now} order by expires_at limit ${limit}
        for update skip locked)`
      ).count,
  })
}

/**
 * Every write in one statement (one round trip, one commit): inserts where an entry was absent, compare-and-set
 * updates and removals where it was seen; a statement that changed fewer rows than it has writes fails on a division
 * by zero, which undoes all of it (a statement is atomic), and answers false.
 */
async function writeAll(
  sql: PostgresDatabase['sql'],
  writes: readonly KvConditionalWrite[],
): Promise<boolean> {
  const rows = writes.map(({ key, seen, text, expiresAt }) => ({
    key,
    seen,
    text,
    expires_at: expiresAt ?? null,
    keep_expiry: expiresAt === undefined,
  }))
  try {
    await sql`with w as (
        select * from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
          as w(key text, seen text, text text, expires_at bigint, keep_expiry boolean)
      ), inserted as (
        insert into kv (key, value, expires_at) select key, text, expires_at from w
        where seen is null and text is not null on conflict do nothing returning 1
      ), replaced as (
        update kv set value = w.text, expires_at = case when w.keep_expiry then kv.expires_at else w.expires_at end
        from w where kv.key = w.key and w.seen is not null and w.text is not null and kv.value = w.seen returning 1
      ), removed as (
        delete from kv using w where kv.key = w.key and w.seen is not null and w.text is null and kv.value = w.seen
        returning 1
      )
      select 1 / (case when (select count(*) from inserted) + (select count(*) from replaced)
        + (select count(*) from removed) = ${writes.length} then 1 else 0 end) as whole`
    return true
  } catch (error) {
    if ((error as { code?: string }).code === DIVISION_BY_ZERO) return false
    throw error
  }
}
