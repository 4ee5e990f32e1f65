import type { KvStore } from '@agentmarket/core'
import { type KvConditionalWrite, kvMethods } from '@agentmarket/store-sql'
import { and, asc, eq, inArray, lte, sql } from 'drizzle-orm'
import type { Database } from './open.ts'
import { kv } from './schema.ts'

/**
 * The key-value methods of the libSQL Store (store-sql kvStore.ts: compare-and-set updates). Every statement is built
 * and prepared once: mppx's replay markers read and write here on each machine payment, and drizzle's builder cost
 * ten times the read.
 */
export function kvStore({ db, connection }: Database): KvStore {
  const { unlocked, commitTogether } = connection
  const key = sql.placeholder('key')
  const value = sql.placeholder('value')
  const seenValue = sql.placeholder('seen')
  const expiresAt = sql.placeholder('expiresAt')
  const now = sql.placeholder('now')
  const limit = sql.placeholder('limit')
  // An update's SET takes SQL, not a bare placeholder.
  const newValue = sql`${value}`
  const valueAt = db.select({ value: kv.value }).from(kv).where(eq(kv.key, key)).prepare()
  const insertIfAbsent = db.insert(kv).values({ key, value, expiresAt }).onConflictDoNothing().prepare()
  // A write without an expiry keeps the row's; one with an expiry (a time or null) replaces it.
  const upsert = db
    .insert(kv)
    .values({ key, value })
    .onConflictDoUpdate({ target: kv.key, set: { value: newValue } })
    .prepare()
  const upsertExpiring = db
    .insert(kv)
    .values({ key, value, expiresAt })
    .onConflictDoUpdate({ target: kv.key, set: { value: newValue, expiresAt: sql`${expiresAt}` } })
    .prepare()
  const remove = db.delete(kv).where(eq(kv.key, key)).prepare()
  const still = and(eq(kv.key, key), eq(kv.value, seenValue))
  const removeIfUnchanged = db.delete(kv).where(still).prepare()
  const replaceIfUnchanged = db.update(kv).set({ value: newValue }).where(still).prepare()
  const replaceExpiringIfUnchanged = db
    .update(kv)
    .set({ value: newValue, expiresAt: sql`${expiresAt}` })
    .where(still)
    .prepare()
  const expired = lte(kv.expiresAt, now)
  const sweep = db
    .delete(kv)
    .where(
      and(
        expired,
        inArray(
          kv.key,
          db.select({ key: kv.key }).from(kv).where(expired).orderBy(asc(kv.expiresAt)).limit(limit),
        ),
      ),
    )
    .prepare()

  /** Rows `write` changed: 1 when its key still held what was seen. */
  const applied = ({ key, seen, text, expiresAt }: KvConditionalWrite): number => {
    if (text === null) return seen === null ? 1 : removeIfUnchanged.run({ key, seen }).changes
    if (seen === null) return insertIfAbsent.run({ key, value: text, expiresAt: expiresAt ?? null }).changes
    return expiresAt === undefined
      ? replaceIfUnchanged.run({ key, seen, value: text }).changes
      : replaceExpiringIfUnchanged.run({ key, seen, value: text, expiresAt }).changes
  }
  /** Thrown inside a transaction to roll it back when an entry changed since it was read. */
  const changed = new Error('a key-value entry changed since it was read')

  return kvMethods({
    read: (key) => valueAt.get({ key })?.value ?? null,
    put: (key, value, expiresAt) =>
      unlocked(() =>
        expiresAt === undefined ? upsert.run({ key, value }) : upsertExpiring.run({ key, value, expiresAt }),
      ),
    remove: (key) => unlocked(() => remove.run({ key })),
    insertIfAbsent: (key, value, expiresAt) =>
      unlocked(() => insertIfAbsent.run({ key, value, expiresAt }).changes),
    removeIfUnchanged: (key, seen) => unlocked(() => removeIfUnchanged.run({ key, seen }).changes),
    replaceIfUnchanged: (key, seen, value, expiresAt) =>
      unlocked(() =>
        expiresAt === undefined
          ? replaceIfUnchanged.run({ key, seen, value }).changes
          : replaceExpiringIfUnchanged.run({ key, seen, value, expiresAt }).changes,
      ),
    writeAll: (writes) =>
      commitTogether(() => {
        if (!writes.every((write) => applied(write) === 1)) throw changed
        return true
      }).catch((error: unknown) => {
        if (error === changed) return false
        throw error
      }),
    sweep: (now, limit) => unlocked(() => sweep.run({ now, limit }).changes),
  })
}
