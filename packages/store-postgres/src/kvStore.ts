import type { KvChange, Store } from '@agentmarket/core'
import type { PostgresDatabase } from './open.ts'

type KvMethods = Pick<Store, 'kvGet' | 'kvPut' | 'kvDelete' | 'kvUpdate'>

const parse = (text: unknown) => (typeof text === 'string' ? JSON.parse(text) : null)

/**
 * The key-value methods of the PostgreSQL Store. An update is an optimistic compare-and-set: it writes only if the
 * entry still holds what `change` saw, else `change` runs again on the new value, so it holds across every node
 * without a lock held between two round trips.
 */
export function kvStore({ sql }: PostgresDatabase): KvMethods {
  const read = async (key: string): Promise<string | null> =>
    (await sql<{ value: string }[]>`select value from kv where key = ${key}`)[0]?.value ?? null

  /** Writes `outcome` for `key` only if the entry still holds `seen` (null: still absent); true when it did. */
  const applyIfUnchanged = async (
    key: string,
    seen: string | null,
    outcome: Exclude<KvChange<unknown>, { op: 'noop' }>,
  ): Promise<boolean> => {
    if (seen === null) {
      if (outcome.op === 'delete') return true
      const value = JSON.stringify(outcome.value)
      return (
        (await sql`insert into kv (key, value) values (${key}, ${value}) on conflict do nothing`).count === 1
      )
    }
    const written =
      outcome.op === 'delete'
        ? await sql`delete from kv where key = ${key} and value = ${seen}`
        : await sql`update kv set value = ${JSON.stringify(outcome.value)} where key = ${key} and value = ${seen}`
    return written.count === 1
  }

  return {
    async kvGet(key) {
      return parse(await read(key))
    },

    async kvPut(key, value) {
      const text = JSON.stringify(value)
      await sql`insert into kv (key, value) values (${key}, ${text})
        on conflict (key) do update set value = excluded.value`
    },

    async kvDelete(key) {
      await sql`delete from kv where key = ${key}`
    },

    async kvUpdate(key, change) {
      for (;;) {
        const seen = await read(key)
        const outcome = change(parse(seen))
        if (outcome.op === 'noop' || (await applyIfUnchanged(key, seen, outcome))) return outcome.result
      }
    },
  }
}
