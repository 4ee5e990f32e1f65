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

/**
 * The secret kept under `setting`, or null while none was ever made: what a check reads, so a refused request (a
 * wrong code, a wrong endpoint secret) never writes the secret that would have signed it.
 * @example const key = await existingSecret(store, 'setting:webhook_key')
 */
export async function existingSecret(store: KvStore, setting: string): Promise<string | null> {
  const current = await store.kvGet(setting)
  return typeof current === 'string' ? current : null
}
