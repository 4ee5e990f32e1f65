import type { Store } from '@agentmarket/core'
import { and, eq, isNull } from 'drizzle-orm'
import type { Database } from './open.ts'
import { kv } from './schema.ts'

type KvMethods = Pick<Store, 'kvGet' | 'kvPut' | 'kvDelete' | 'kvUpdate'>

const parse = (text: unknown) => (typeof text === 'string' ? JSON.parse(text) : null)

/** The key-value methods of the libSQL Store; updates are compare-and-set writes. */
export function kvStore({ db }: Database): KvMethods {
  return {
    async kvGet(key) {
      const [row] = await db.select().from(kv).where(eq(kv.key, key))
      return row ? JSON.parse(row.value) : null
    },

    async kvPut(key, value) {
      const text = JSON.stringify(value)
      await db
        .insert(kv)
        .values({ key, value: text })
        .onConflictDoUpdate({ target: kv.key, set: { value: text } })
    },

    async kvDelete(key) {
      await db.delete(kv).where(eq(kv.key, key))
    },

    async kvUpdate(key, change) {
      // Optimistic compare-and-set: each write applies only if the entry is still what `change` saw, else `change`
      // runs again on the new value. No interactive transaction, so it holds across connections and processes.
      for (;;) {
        const [row] = await db.select().from(kv).where(eq(kv.key, key))
        const seen = row?.value ?? null
        const outcome = change(parse(seen))
        if (outcome.op === 'noop') return outcome.result
        const unchanged = seen === null ? isNull(kv.value) : eq(kv.value, seen)
        let written: { rowsAffected: number }
        if (outcome.op === 'delete') {
          if (seen === null) return outcome.result
          written = await db.delete(kv).where(and(eq(kv.key, key), unchanged))
        } else if (seen === null) {
          const value = JSON.stringify(outcome.value)
          written = await db.insert(kv).values({ key, value }).onConflictDoNothing()
        } else {
          written = await db
            .update(kv)
            .set({ value: JSON.stringify(outcome.value) })
            .where(and(eq(kv.key, key), unchanged))
        }
        if (written.rowsAffected === 1) return outcome.result
      }
    },
  }
}
