import { MARKET_TYPES } from '@agentmarket/core/typed-data'
import type { Account, Address, Hex, TypedDataDefinition } from 'viem'

/**
 * The EIP-712 types of the messages a buyer's or owner's wallet signs, as the marketplace defines them (core's
 * `@agentmarket/core/typed-data`, a module with no imports). The client signs these types, never the types an answer
 * carries, so a server cannot make a wallet sign anything else.
 */
export { MARKET_TYPES }

/** One of the marketplace's messages. */
export type MarketMessage = keyof typeof MARKET_TYPES

/**
 * What signs: a viem local account (`privateKeyToAccount`, `mnemonicToAccount`) or a wallet client with an account
 * (`createWalletClient({ account, … })`, a browser wallet).
 */
export type Signer =
  | (Pick<Account, 'address'> & { signTypedData: NonNullable<Account['signTypedData']> })
  | {
      account: Account | Address | undefined
      signTypedData: (args: TypedDataDefinition & { account: Account | Address }) => Promise<Hex>
    }

/** The address that signs for `signer`. */
export function signerAddress(signer: Signer): Address {
  if ('address' in signer) return signer.address
  const account = signer.account
  if (!account) throw new Error('the wallet client has no account: create it with one')
  return typeof account === 'string' ? account : account.address
}

/** The typed data a task or card serves, as the wire shows it. */
export type ServedTypedData = {
  domain: { name: string; version: string; chainId: number }
  primaryType: string
  message: Record<string, unknown>
}

/**
 * The served template of `primaryType`, checked: refuses a template of another message or domain, and one whose
 * message names another agent or task than `expected`.
 */
export function checkedTemplate(
  primaryType: MarketMessage,
  served: ServedTypedData | null,
  expected: { agent: string; task: string },
): ServedTypedData {
  if (!served) throw new Error(`the task offers no ${primaryType} to sign (see its status)`)
  const { domain, message } = served
  if (served.primaryType !== primaryType || domain.name !== 'agentmarket' || domain.version !== '1')
    throw new Error(`the server asked to sign ${served.primaryType} of ${domain.name}, not ${primaryType}`)
  if (String(message.agent).toLowerCase() !== expected.agent.toLowerCase() || message.task !== expected.task)
    throw new Error(
      `the ${primaryType} to sign names another agent or task than ${expected.agent}/${expected.task}`,
    )
  return served
}

/** Signs `primaryType` over the served template's domain and message (checked), `fill` written over the message. */
export async function signServed(
  signer: Signer,
  primaryType: MarketMessage,
  served: ServedTypedData | null,
  expected: { agent: string; task: string },
  fill: Record<string, unknown>,
): Promise<Hex> {
  const { domain, message } = checkedTemplate(primaryType, served, expected)
  return signTyped(signer, {
    domain: { name: 'agentmarket', version: '1', chainId: domain.chainId },
    primaryType,
    message: { ...message, ...fill },
  })
}

/** Signs one of the marketplace's messages with its own types. */
export function signTyped(
  signer: Signer,
  typed: {
    domain: { name: string; version: string; chainId?: number }
    primaryType: MarketMessage
    message: Record<string, unknown>
  },
): Promise<Hex> {
  const definition = {
    ...typed,
    types: { [typed.primaryType]: MARKET_TYPES[typed.primaryType] },
  } as unknown as TypedDataDefinition
  if ('address' in signer) return signer.signTypedData(definition)
  // The account object itself: a local account in a wallet client signs locally, an address asks the wallet.
  if (!signer.account) throw new Error('the wallet client has no account: create it with one')
  return signer.signTypedData({ ...definition, account: signer.account })
}
