import {
  type ChainReader,
  type PaymentCheck,
  type PaymentReceipt,
  TRANSFER_EVENT_ABI,
} from '@agentmarket/core'
import { type Address, decodeEventLog, type Hex, isAddressEqual, zeroAddress } from 'viem'

/** What a check of an arbitrary transaction expects of it: the token, and the confirmations a payment needs. */
export type HashCheckRules = { token: Address; minConfirmations: number }

/** The first Transfer of `token` in the receipt, decoded; null when there is none (or no receipt). */
function firstTransfer(
  receipt: PaymentReceipt | null,
  token: Address,
): { to: Address; value: bigint } | null {
  for (const log of receipt?.logs ?? []) {
    if (!isAddressEqual(log.address, token)) continue
    try {
      const { args } = decodeEventLog({
        abi: TRANSFER_EVENT_ABI,
        topics: log.topics as [Hex, ...Hex[]],
        data: log.data,
        strict: true,
      })
      return { to: args.to, value: args.value }
    } catch {
      // another event of the token (Approval): read on
    }
  }
  return null
}

/**
 * A check of each transaction as a payment in `token` to whoever its first transfer of that token pays (any seller),
 * of at least that amount, from any sender. A list of bare hashes names no seller or price, so they are read from
 * the chain here, once, before anything is timed; the verifier then applies every rule as it does for a task. A
 * real transfer of the token is ok; anything else keeps the verifier's reason: no receipt (or one too recent) is
 * pending, a failed transaction reverted, one that moves none of the token wrong_token.
 * @example const checks = await checksForHashes(viemChain({ rpcUrl }), hashes, { token: USDC, minConfirmations: 3 })
 */
export async function checksForHashes(
  chain: ChainReader,
  hashes: Hex[],
  { token, minConfirmations }: HashCheckRules,
): Promise<PaymentCheck[]> {
  const receipts = await chain.receipts(hashes)
  return hashes.map((txHash, index) => {
    const transfer = firstTransfer(receipts[index] ?? null, token)
    // Without a transfer the verdict is decided before the recipient is looked at; a transaction mined only after
    // this read would show as wrong_recipient.
    const expected = {
      token,
      recipient: transfer?.to ?? zeroAddress,
      minAmount: transfer?.value ?? 0n,
      minConfirmations,
    }
    return { txHash, kind: 'transfer', expected }
  })
}
