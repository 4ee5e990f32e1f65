import { type Address, type Hex, hashTypedData } from 'viem'
import type { ChainReader } from './ports/Chain.ts'
import { signatureOf } from './SignatureCheck.ts'

/** The EIP-712 domain of the messages wallets sign for this marketplace, on the payment chain `chainId`. */
export type MarketDomain = { name: 'agentmarket'; version: '1'; chainId: number }

/** One of the marketplace's EIP-712 messages, as a wallet signs it (viem `signTypedData`, `eth_signTypedData_v4`). */
export type MarketTypedData<Types, Primary extends string, Message> = {
  domain: MarketDomain
  types: Types
  primaryType: Primary
  message: Message
}

/** The typed data of `message` under the marketplace's domain on the payment chain `chainId`. */
export function marketTypedData<Types, Primary extends string, Message>(
  chainId: number,
  types: Types,
  primaryType: Primary,
  message: Message,
): MarketTypedData<Types, Primary, Message> {
  return { domain: { name: 'agentmarket', version: '1', chainId }, types, primaryType, message }
}

/**
 * True when `signature` is `wallet`'s signature of `typed`: recovered locally from a key's signature, else (contract
 * wallets: ERC-1271, ERC-6492) asked of the chain when the reader can.
 */
export async function signedByWallet<Types, Primary extends string, Message>(
  chain: Pick<ChainReader, 'isValidSignature'> | null,
  wallet: Address,
  typed: MarketTypedData<Types, Primary, Message>,
  signature: Hex,
): Promise<boolean> {
  const hash = hashTypedData(typed as unknown as Parameters<typeof hashTypedData>[0])
  return (await signatureOf(wallet, hash, signature, chain)) === 'ok'
}
