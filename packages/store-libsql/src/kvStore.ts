import type { KvStore } from '@agentmarket/core'
import { kvMethods } from '@agentmarket/store-sql'
import { and, eq, sql } from 'drizzle-orm'
import type { Database } from './open.ts'
import { kv } from './schema.ts'

/**
 * The key-value methods of the libSQL Store (store-sql kvStore.ts: compare-and-set updates). Every statement is built
 * and prepared once: mppx's replay markers read and write here on each machine payment, and drizzle's builder cost
 * ten times the read.
 */
export function kvStore({ db, connection }: Database): KvStore {
  const { unlocked } = connection
  const key = sql.placeholder('key')
  const value = sql.placeholder('value')
  const seenValue = sql.placeholder('seen')
  // An update's SET takes SQL, not a bare placeholder.
  const newValue = sql`${value}`
  const valueAt = db.select({ value: kv.value }).from(kv).where(eq(kv.key, key)).prepare()
  const insertIfAbsent = db.insert(kv).values({ key, value }).onConflictDoNothing().prepare()
  const upsert = db
    .insert(kv)
    .values({ key, value })
    .onConflictDoUpdate({ target: kv.key, set: { value: newValue } })
    .prepare()
  const remove = db.delete(kv).where(eq(kv.key, key)).prepare()
  const still = and(eq(kv.key, key), eq(kv.value, seenValue))
  const removeIfUnchanged = db.delete(kv).where(still).prepare()
  const replaceIfUnchanged = db.update(kv).set({ value: newValue }).where(still).prepare()

  return kvMethods({
    read: (key) => valueAt.get({ key })?.value ?? null,
    put: (key, value) => unlocked(() => upsert.run({ key, value })),
    remove: (key) => unlocked(() => remove.run({ key })),
    insertIfAbsent: (key, value) => unlocked(() => insertIfAbsent.run({ key, value }).changes),
    removeIfUnchanged: (key, seen) => unlocked(() => removeIfUnchanged.run({ key, seen }).changes),
    replaceIfUnchanged: (key, seen, value) =>
      unlocked(() => replaceIfUnchanged.run({ key, seen, value }).changes),
  })
}
