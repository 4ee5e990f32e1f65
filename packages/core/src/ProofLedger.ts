import type { Address, Hex } from 'viem'
import { MarketError } from './errors.ts'
import type { KvStore } from './ports/KvStore.ts'
import { WALLET_PROOF_SKEW_SECONDS, WALLET_PROOF_WINDOW_SECONDS } from './WalletProof.ts'

/** Most proofs one wallet may have spent within a window; past it, more are refused (429) until some expire. */
export const MAX_LIVE_PROOFS = 500

/** How long a spent proof is remembered: as long as its timestamp could still be accepted. */
const REMEMBER_MS = (WALLET_PROOF_WINDOW_SECONDS + WALLET_PROOF_SKEW_SECONDS) * 1000

type Spent = [id: string, forgetAt: number]

/**
 * Records the proof `id` (the digest `wallet` signed, never its signature bytes, so a re-encoded signature is the same
 * proof; made at `at`, ms) of `wallet` as spent, in one atomic store update shared by every
 * process: true the first time, false for a replay. A wallet's entry holds only proofs that could still be accepted.
 * @example if (!(await spendProof(store, wallet, result.id, result.at, now))) throw replayed()
 */
export async function spendProof(
  store: KvStore,
  wallet: Address,
  id: Hex,
  at: number,
  now: Date,
): Promise<boolean> {
  const forgetAt = at + REMEMBER_MS
  return store.kvUpdate(`wallet-proofs:${wallet.toLowerCase()}`, (current) => {
    const live = (Array.isArray(current) ? (current as Spent[]) : []).filter(
      ([, until]) => until > now.getTime(),
    )
    if (live.some(([seen]) => seen === id)) return { op: 'noop', result: false }
    if (live.length >= MAX_LIVE_PROOFS)
      throw new MarketError(
        'too_many_proofs',
        429,
        'Too many wallet proofs',
        `This wallet signed more than ${MAX_LIVE_PROOFS} requests in ${REMEMBER_MS / 60_000} minutes; wait a few minutes.`,
      )
    return { op: 'set', value: [...live, [id, forgetAt]], result: true }
  })
}
