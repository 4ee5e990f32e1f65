import type { KvChange, Store } from '@agentmarket/core'
import { and, eq, sql } from 'drizzle-orm'
import type { Database } from './open.ts'
import { kv } from './schema.ts'

type KvMethods = Pick<Store, 'kvGet' | 'kvPut' | 'kvDelete' | 'kvUpdate'>

const parse = (text: unknown) => (typeof text === 'string' ? JSON.parse(text) : null)

/**
 * The key-value methods of the libSQL Store; updates are compare-and-set writes. Every statement is built and
 * prepared once: mppx's replay markers read and write here on each machine payment, and drizzle's builder cost ten
 * times the read.
 */
export function kvStore({ db }: Database): KvMethods {
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

  /** Writes `outcome` for `key` only if the entry still holds `seen` (null: still absent); true when it did. */
  const applyIfUnchanged = (
    key: string,
    seen: string | null,
    outcome: Exclude<KvChange<unknown>, { op: 'noop' }>,
  ) => {
    if (seen === null) {
      if (outcome.op === 'delete') return true
      return insertIfAbsent.run({ key, value: JSON.stringify(outcome.value) }).changes === 1
    }
    const written =
      outcome.op === 'delete'
        ? removeIfUnchanged.run({ key, seen })
        : replaceIfUnchanged.run({ key, seen, value: JSON.stringify(outcome.value) })
    return written.changes === 1
  }
  const read = (key: string): string | null => valueAt.get({ key })?.value ?? null

  return {
    async kvGet(key) {
      return parse(read(key))
    },

    async kvPut(key, value) {
      upsert.run({ key, value: JSON.stringify(value) })
    },

    async kvDelete(key) {
      remove.run({ key })
    },

    async kvUpdate(key, change) {
      // Optimistic compare-and-set: each write applies only if the entry is still what `change` saw, else `change`
      // runs again on the new value. No interactive transaction, so it holds across connections and processes.
      for (;;) {
        const seen = read(key)
        const outcome = change(parse(seen))
        if (outcome.op === 'noop' || applyIfUnchanged(key, seen, outcome)) return outcome.result
      }
    },
  }
}
