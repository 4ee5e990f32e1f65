import { hashSecret, hmacSha256Hex } from './Credentials.ts'
import { existingSecret, persistentSecret } from './PersistentSecret.ts'
import type { KvStore } from './ports/KvStore.ts'
import type { Random } from './ports/Random.ts'

/** How long a pairing code may be spent after it was issued (7 days), unless the host says otherwise. */
export const PAIRING_CODE_TTL_MS = 7 * 24 * 60 * 60 * 1000

const SECRET_SETTING = 'setting:pairing_secret'

/** Digests of pairing codes under the marketplace's secret: what the store keeps, never the code. */
export type PairingDigests = {
  /** The digest a code is stored and looked up under: `h1:` + HMAC-SHA256(secret, code). */
  of(code: string): Promise<string>
  /**
   * The digest a code sent to be spent is looked up under, or null while no code was ever issued under a kept secret
   * (none is made for a lookup: a wrong code writes nothing).
   */
  existingOf(code: string): Promise<string | null>
  /** The digest codes issued before the HMAC had (unsalted SHA-256), still accepted until they expire. */
  legacyOf(code: string): string
}

/**
 * Pairing-code digests keyed by `secret` (PAIRING_SECRET, kept outside the database so a stolen database alone gives
 * no code back), or by a secret made once and kept in the store when the host gives none. An HMAC (`hmacSha256Hex`,
 * the host's native one when it gave it): a code has about 40 bits, which a plain hash would give back to anyone holding
 * the database in minutes.
 * @example const digests = pairingDigests(store, random); await digests.of('AGM-ABCD-EFGH')
 */
export function pairingDigests(store: KvStore, random: Random, secret?: string): PairingDigests {
  let key: Promise<string> | null = null
  // A failed read is tried again next time (a database down at the first pairing must not end pairing for good).
  const remember = (raw: Promise<string>) => {
    key = raw.catch((error: unknown) => {
      key = null
      throw error
    })
    return key
  }
  const digestOf = async (raw: string, code: string) => `h1:${await hmacSha256Hex(raw, code)}`
  return {
    async of(code) {
      const made =
        key ?? remember(secret ? Promise.resolve(secret) : persistentSecret(store, random, SECRET_SETTING))
      return digestOf(await made, code)
    },
    async existingOf(code) {
      if (key) return digestOf(await key, code)
      const raw = secret ?? (await existingSecret(store, SECRET_SETTING))
      return raw === null ? null : digestOf(await (key ?? remember(Promise.resolve(raw))), code)
    },
    legacyOf: (code) => hashSecret(code),
  }
}
