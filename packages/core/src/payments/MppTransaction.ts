import type { Address, Hex } from 'viem'

/** A Tempo transaction as viem/tempo decodes it: its calls, chain, expiry and recovered sender. */
export type DecodedTempoTransaction = {
  chainId?: number
  calls?: readonly { to?: Address | null; data?: Hex; value?: bigint }[]
  from?: Address
  signature?: unknown
  validBefore?: number
}

/** How many decoded transactions are kept: the ones of the orders in flight. */
const KEPT = 256
const decoded = new Map<string, Promise<DecodedTempoTransaction>>()

/**
 * The signed Tempo transaction `serialized` decoded, its sender recovered (secp256k1 in JavaScript, ~1 ms): once per
 * process for the few transactions in flight, since an order reads its payer before the charge verifies its calls.
 * Decoding is a pure function of the bytes, so a kept answer is the answer. Throws (rejects) on malformed bytes.
 */
export function decodeTempoTransaction(serialized: Hex): Promise<DecodedTempoTransaction> {
  const key = serialized.toLowerCase()
  let found = decoded.get(key)
  if (!found) {
    found = import('viem/tempo').then(
      ({ Transaction }) => Transaction.deserialize(serialized as never) as DecodedTempoTransaction,
    )
    if (decoded.size >= KEPT) decoded.delete(decoded.keys().next().value as string)
    decoded.set(key, found)
    // A failed decode is not kept: the same bytes fail again, cheaply, and fill no slot.
    found.catch(() => decoded.delete(key))
  }
  return found
}
