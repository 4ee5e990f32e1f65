import { hashSecret } from './Credentials.ts'
import { type KeptSecret, keptSecret } from './PersistentSecret.ts'
import { hashes } from './ports/Hashes.ts'
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
 * no code back), or by a secret made once and kept in the store when the host gives none. An HMAC (`hashes().hmacSha256`,
 * the host's native one when it gave it): a code has about 40 bits, which a plain hash would give back to anyone holding
 * the database in minutes.
 * @example const digests = pairingDigests(store, random); await digests.of('AGM-ABCD-EFGH')
 */
export function pairingDigests(store: KvStore, random: Random, secret?: string): PairingDigests {
  const kept: KeptSecret = secret
    ? { made: async () => secret, existing: async () => secret }
    : keptSecret(store, random, SECRET_SETTING)
  const digestOf = async (raw: string, code: string) => `h1:${await hashes().hmacSha256(raw, code, 'hex')}`
  return {
    of: async (code) => digestOf(await kept.made(), code),
    async existingOf(code) {
      const raw = await kept.existing()
      return raw === null ? null : digestOf(raw, code)
    },
    legacyOf: (code) => hashSecret(code),
  }
}
