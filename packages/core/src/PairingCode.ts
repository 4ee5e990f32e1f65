import { bytesToHex } from 'viem'
import { hashSecret } from './Credentials.ts'
import { persistentSecret } from './PersistentSecret.ts'
import type { KvStore } from './ports/KvStore.ts'
import type { Random } from './ports/Random.ts'

/** How long a pairing code may be spent after it was issued (7 days), unless the host says otherwise. */
export const PAIRING_CODE_TTL_MS = 7 * 24 * 60 * 60 * 1000

const SECRET_SETTING = 'setting:pairing_secret'
const utf8 = new TextEncoder()

/** Digests of pairing codes under the marketplace's secret: what the store keeps, never the code. */
export type PairingDigests = {
  /** The digest a code is stored and looked up under: `h1:` + HMAC-SHA256(secret, code). */
  of(code: string): Promise<string>
  /** The digest codes issued before the HMAC had (unsalted SHA-256), still accepted until they expire. */
  legacyOf(code: string): string
}

/**
 * Pairing-code digests keyed by `secret` (PAIRING_SECRET, kept outside the database so a stolen database alone gives
 * no code back), or by a secret made once and kept in the store when the host gives none. Web Crypto's HMAC: a code
 * has about 40 bits, which a plain hash would give back to anyone holding the database in minutes.
 * @example const digests = pairingDigests(store, random); await digests.of('AGM-ABCD-EFGH')
 */
export function pairingDigests(store: KvStore, random: Random, secret?: string): PairingDigests {
  let key: Promise<CryptoKey> | null = null
  const load = async () => {
    const raw = secret ?? (await persistentSecret(store, random, SECRET_SETTING))
    return crypto.subtle.importKey('raw', utf8.encode(raw), { name: 'HMAC', hash: 'SHA-256' }, false, [
      'sign',
    ])
  }
  return {
    async of(code) {
      key ??= load()
      const digest = await crypto.subtle.sign('HMAC', await key, utf8.encode(code))
      return `h1:${bytesToHex(new Uint8Array(digest)).slice(2)}`
    },
    legacyOf: (code) => hashSecret(code),
  }
}
