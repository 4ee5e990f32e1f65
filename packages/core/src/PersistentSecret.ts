import { bytesToHex } from 'viem'
import type { KvStore } from './ports/KvStore.ts'
import type { Random } from './ports/Random.ts'

/**
 * A secret kept in the store under `setting`: made once from 32 random bytes (hex), then read by every process.
 * Processes starting together race to make it; one write wins and the others read it.
 * @example const key = await persistentSecret(store, cryptoRandom(), 'setting:mpp_secret_key')
 */
export async function persistentSecret(store: KvStore, random: Random, setting: string): Promise<string> {
  const fresh = bytesToHex(random.bytes(32))
  return store.kvUpdate(setting, (current) =>
    typeof current === 'string'
      ? { op: 'noop', result: current }
      : { op: 'set', value: fresh, result: fresh },
  )
}

/** A secret kept in the store, read once per process: `made` reads or makes it, `existing` only reads it. */
export type KeptSecret = {
  /** The secret, made when none was kept yet. */
  made(): Promise<string>
  /**
   * The secret, or null while none was ever made: what a check reads, so a refused request (a wrong code, a wrong
   * endpoint secret) never writes the secret that would have signed it.
   */
  existing(): Promise<string | null>
}

/**
 * The secret kept under `setting`, memoised once found; a failed or empty read is tried again next time (a database
 * down at the first request must not end the feature for good).
 * @example const key = keptSecret(store, cryptoRandom(), 'setting:webhook_key'); await key.existing()
 */
export function keptSecret(store: KvStore, random: Random, setting: string): KeptSecret {
  let kept: Promise<string> | null = null
  const remember = (secret: Promise<string>) => {
    kept = secret.catch((error: unknown) => {
      kept = null
      throw error
    })
    return kept
  }
  return {
    made: () => kept ?? remember(persistentSecret(store, random, setting)),
    existing: async () => {
      if (kept) return kept
      const current = await store.kvGet(setting)
      if (typeof current !== 'string') return null
      return kept ?? remember(Promise.resolve(current))
    },
  }
}
