import type { KvChange, KvExpiry, KvStore, KvWrite } from '@agentmarket/core'

/** A value, or a promise of it: store-libsql's statements answer at once, store-postgres's over the network. */
type Answer<T> = T | Promise<T>

/** An entry's `expires_at` (epoch ms) as a write gives it: a time, null for none, undefined to keep the row's. */
export type ExpiresAt = number | null | undefined

/**
 * The key-value statements a store runs its own way (store-libsql: drizzle statements prepared once; store-postgres:
 * postgres.js templates). Values are JSON texts; each conditional write answers the rows it changed.
 */
export type KvStatements = {
  /** The text held at `key`, or null. */
  read(key: string): Answer<string | null>
  /** Writes `text` at `key`, whatever it held. */
  put(key: string, text: string, expiresAt: ExpiresAt): Answer<unknown>
  /** Removes `key`. */
  remove(key: string): Answer<unknown>
  /** Writes `text` at `key` only if it holds nothing. */
  insertIfAbsent(key: string, text: string, expiresAt: number | null): Answer<number>
  /** Removes `key` only if it still holds `seen`. */
  removeIfUnchanged(key: string, seen: string): Answer<number>
  /** Writes `text` at `key` only if it still holds `seen`. */
  replaceIfUnchanged(key: string, seen: string, text: string, expiresAt: ExpiresAt): Answer<number>
  /**
   * Applies every write in one transaction, each only if its key still holds its `seen` (null: still absent); when one
   * does not apply, none does. Answers whether they all did.
   */
  writeAll(writes: readonly KvConditionalWrite[]): Answer<boolean>
  /** Removes up to `limit` rows whose `expires_at` is at or before `now` (epoch ms), oldest first; answers how many. */
  sweep(now: number, limit: number): Answer<number>
}

/**
 * One write of an atomic update of several keys: `text` at `key` (null: remove it) only if it still holds `seen`
 * (null: absent), with `expiresAt` as KvStatements' put.
 */
export type KvConditionalWrite = {
  key: string
  seen: string | null
  text: string | null
  expiresAt: ExpiresAt
}

/** The `expires_at` a write gives (KvExpiry): epoch ms, null for none, undefined to keep the row's. */
export const expiresAtOf = (options: KvExpiry | undefined): ExpiresAt =>
  options?.expiresAt === undefined ? undefined : (options.expiresAt?.getTime() ?? null)

const parse = (text: string | null) => (typeof text === 'string' ? JSON.parse(text) : null)

/** The conditional write `write` makes at `key` read as `seen`; none for a noop or the removal of an absent entry. */
function conditionalWrite(
  key: string,
  seen: string | null,
  write: KvWrite | undefined,
): KvConditionalWrite[] {
  if (write === undefined || write.op === 'noop' || (write.op === 'delete' && seen === null)) return []
  if (write.op === 'delete') return [{ key, seen, text: null, expiresAt: undefined }]
  return [{ key, seen, text: JSON.stringify(write.value), expiresAt: expiresAtOf(write) }]
}

/**
 * The key-value methods of a SQL Store over its statements. An update is an optimistic compare-and-set: each write
 * applies only if the entry is still what `change` saw, else `change` runs again on the new value. No lock is held
 * between the read and the write, so it holds across connections, processes and nodes.
 */
export function kvMethods(statements: KvStatements): KvStore {
  const { read, put, remove, insertIfAbsent, removeIfUnchanged, replaceIfUnchanged, writeAll, sweep } =
    statements

  /** Writes `outcome` for `key` only if the entry still holds `seen` (null: still absent); true when it did. */
  const applyIfUnchanged = async (
    key: string,
    seen: string | null,
    outcome: Exclude<KvChange<unknown>, { op: 'noop' }>,
  ): Promise<boolean> => {
    if (outcome.op === 'delete') return seen === null || (await removeIfUnchanged(key, seen)) === 1
    const text = JSON.stringify(outcome.value)
    const expiresAt = expiresAtOf(outcome)
    if (seen === null) return (await insertIfAbsent(key, text, expiresAt ?? null)) === 1
    const written = await replaceIfUnchanged(key, seen, text, expiresAt)
    return written === 1
  }

  return {
    async kvGet(key) {
      return parse(await read(key))
    },

    async kvPut(key, value, options) {
      await put(key, JSON.stringify(value), expiresAtOf(options))
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

    async kvUpdateAll(keys, change) {
      for (;;) {
        const seen = await Promise.all(keys.map((key) => read(key)))
        const { writes, result } = change(seen.map(parse))
        const pending = keys.flatMap((key, index) =>
          conditionalWrite(key, seen[index] ?? null, writes[index]),
        )
        if (pending.length === 0 || (await writeAll(pending))) return result
      }
    },

    async kvSweepExpired(now, limit) {
      return limit > 0 ? await sweep(now.getTime(), limit) : 0
    },
  }
}
