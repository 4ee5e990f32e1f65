import type { KvChange, KvStore } from '@agentmarket/core'

/** A value, or a promise of it: store-libsql's statements answer at once, store-postgres's over the network. */
type Answer<T> = T | Promise<T>

/**
 * The key-value statements a store runs its own way (store-libsql: drizzle statements prepared once; store-postgres:
 * postgres.js templates). Values are JSON texts; each conditional write answers the rows it changed.
 */
export type KvStatements = {
  /** The text held at `key`, or null. */
  read(key: string): Answer<string | null>
  /** Writes `text` at `key`, whatever it held. */
  put(key: string, text: string): Answer<unknown>
  /** Removes `key`. */
  remove(key: string): Answer<unknown>
  /** Writes `text` at `key` only if it holds nothing. */
  insertIfAbsent(key: string, text: string): Answer<number>
  /** Removes `key` only if it still holds `seen`. */
  removeIfUnchanged(key: string, seen: string): Answer<number>
  /** Writes `text` at `key` only if it still holds `seen`. */
  replaceIfUnchanged(key: string, seen: string, text: string): Answer<number>
}

const parse = (text: string | null) => (typeof text === 'string' ? JSON.parse(text) : null)

/**
 * The key-value methods of a SQL Store over its statements. An update is an optimistic compare-and-set: each write
 * applies only if the entry is still what `change` saw, else `change` runs again on the new value. No lock is held
 * between the read and the write, so it holds across connections, processes and nodes.
 */
export function kvMethods(statements: KvStatements): KvStore {
  const { read, put, remove, insertIfAbsent, removeIfUnchanged, replaceIfUnchanged } = statements

  /** Writes `outcome` for `key` only if the entry still holds `seen` (null: still absent); true when it did. */
  const applyIfUnchanged = async (
    key: string,
    seen: string | null,
    outcome: Exclude<KvChange<unknown>, { op: 'noop' }>,
  ): Promise<boolean> => {
    if (seen === null)
      return outcome.op === 'delete' || (await insertIfAbsent(key, JSON.stringify(outcome.value))) === 1
    const written =
      outcome.op === 'delete'
        ? await removeIfUnchanged(key, seen)
        : await replaceIfUnchanged(key, seen, JSON.stringify(outcome.value))
    return written === 1
  }

  return {
    async kvGet(key) {
      return parse(await read(key))
    },

    async kvPut(key, value) {
      await put(key, JSON.stringify(value))
    },

    async kvDelete(key) {
      await remove(key)
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
