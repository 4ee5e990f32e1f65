import { BASE_USDC, type ChainReader, type PaymentReceipt } from '@agentmarket/core'
import { type Address, encodeAbiParameters, encodeEventTopics, type Hex, parseAbi } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'

/** The seller's wallet the scripted payments pay. */
export const SELLER: Address = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
/** The wallet that pays (and signs payer proofs). */
export const PAYER = privateKeyToAccount(`0x${'5a'.repeat(32)}`)
const BUYER: Address = PAYER.address
/** The hash of the scripted payment. */
export const TX_HASH: Hex = `0x${'cd'.repeat(32)}`
const TRANSFER = parseAbi(['event Transfer(address indexed from, address indexed to, uint256 value)'])

/** A mined USDC payment of 1.5 from PAYER to the seller in `block`, by the transaction `hash`. */
export function payment(block: bigint, hash: Hex = TX_HASH): PaymentReceipt {
  return {
    transactionHash: hash,
    blockNumber: block,
    status: 'success',
    from: BUYER,
    to: BASE_USDC,
    input: null,
    logs: [
      {
        address: BASE_USDC,
        topics: encodeEventTopics({
          abi: TRANSFER,
          eventName: 'Transfer',
          args: { from: BUYER, to: SELLER },
        }) as Hex[],
        data: encodeAbiParameters([{ type: 'uint256' }], [1_500_000n]),
        logIndex: 0,
      },
    ],
  }
}

/** A chain whose answers the test scripts: each read takes the next head, or throws what it is given. */
export function scriptedChain() {
  const script = { heads: [] as (bigint | Error)[], receipts: [] as ((PaymentReceipt | null)[] | Error)[] }
  const next = <T>(list: (T | Error)[]): T => {
    const value = list.length > 1 ? list.shift() : list[0]
    if (value === undefined) throw new Error('the script ran out')
    if (value instanceof Error) throw value
    return value
  }
  const chain: ChainReader = {
    headBlock: async () => next(script.heads),
    receipts: async () => next(script.receipts),
  }
  return { chain, script }
}
