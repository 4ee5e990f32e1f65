import type { KvChange, Store } from '@agentmarket/core'
import { and, eq } from 'drizzle-orm'
import type { Database } from './open.ts'
import { kv } from './schema.ts'

type KvMethods = Pick<Store, 'kvGet' | 'kvPut' | 'kvDelete' | 'kvUpdate'>

const parse = (text: unknown) => (typeof text === 'string' ? JSON.parse(text) : null)

/** The key-value methods of the libSQL Store; updates are compare-and-set writes. */
export function kvStore({ db }: Database): KvMethods {
  /** Writes `outcome` for `key` only if the entry still holds `seen` (null: still absent); true when it did. */
  const applyIfUnchanged = async (
    key: string,
    seen: string | null,
    outcome: Exclude<KvChange<unknown>, { op: 'noop' }>,
  ) => {
    if (seen === null) {
      if (outcome.op === 'delete') return true
      const inserted = await db
        .insert(kv)
        .values({ key, value: JSON.stringify(outcome.value) })
        .onConflictDoNothing()
      return inserted.changes === 1
    }
    const still = and(eq(kv.key, key), eq(kv.value, seen))
    const written =
      outcome.op === 'delete'
        ? await db.delete(kv).where(still)
        : await db
            .update(kv)
            .set({ value: JSON.stringify(outcome.value) })
            .where(still)
    return written.changes === 1
  }

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
        if (outcome.op === 'noop' || (await applyIfUnchanged(key, seen, outcome))) return outcome.result
      }
    },
  }
}
