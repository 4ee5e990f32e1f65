import type {
  PaymentPayload,
  PaymentRequired,
  PaymentRequirements,
  SettleResponse,
  VerifyResponse,
} from '@x402/core/types'
import { type Address, getAddress, type Hex, isAddress, isAddressEqual, parseAbi } from 'viem'
import type { MarketConfig } from '../Config.ts'
import type { ChainReader } from '../ports/Chain.ts'

export type { PaymentPayload, PaymentRequired, PaymentRequirements, SettleResponse, VerifyResponse }

// @x402/core (and zod under it) loads on the first x402 request, not with the core: most hosts never take x402.
let library: Promise<[typeof import('@x402/core/http'), typeof import('@x402/core/schemas')]> | null = null
const loadX402 = () => {
  library ??= Promise.all([import('@x402/core/http'), import('@x402/core/schemas')])
  return library
}

/** The request header an x402 v2 client pays with, and the answer headers of the protocol. */
export const X402_HEADERS = {
  /** Request: the signed payment (base64 JSON PaymentPayload). */
  signature: 'payment-signature',
  /** 402 answer: what to pay (base64 JSON PaymentRequired). */
  required: 'payment-required',
  /** Paid answer: the settlement (base64 JSON SettleResponse). */
  response: 'payment-response',
} as const

/**
 * Verifies and settles x402 `exact` payments on the payment chain (the marketplace as its own facilitator). The
 * viem adapter (`viemX402Facilitator`) is the implementation that talks to a chain.
 */
export type X402Facilitator = {
  /** Checks an authorization against what it must pay: signature, payee, amount, time window, a simulation. */
  verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse>
  /**
   * Submits the authorization. `beforeBroadcast` runs with the hash of the signed settlement transaction before it is
   * sent, so the caller can record it first (a crash after sending then loses nothing); if it throws, nothing is sent.
   * `chain`, when given, is the caller's own chain reader: a facilitator that reads the settlement's receipt there
   * lets the caller judge the receipt its reader returned without reading it again.
   */
  settle(
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    beforeBroadcast: (txHash: Hex) => Promise<void>,
    chain?: Pick<ChainReader, 'receipts'>,
  ): Promise<SettleResponse>
}

/** How a marketplace takes x402 payments on its payment chain (USDC by EIP-3009 `transferWithAuthorization`). */
export type X402Settings = {
  facilitator: X402Facilitator
  /** Seconds a buyer's authorization stays valid (x402's maxTimeoutSeconds). @default 300 */
  maxTimeoutSeconds?: number
  /** The token's EIP-712 domain: "USD Coin" version "2" on Base, "USDC" version "2" on Base Sepolia. */
  tokenDomain?: { name: string; version: string }
}

/** USDC's EIP-712 domain name and version on a chain (Circle names it differently on testnets). */
export function usdcDomain(chainId: number): { name: string; version: string } {
  return chainId === 84532 ? { name: 'USDC', version: '2' } : { name: 'USD Coin', version: '2' }
}

/** The CAIP-2 network of the payment chain (`eip155:8453`). */
export const x402Network = (config: MarketConfig) => `eip155:${config.chain.chainId}` as const

/** What one order must pay under the `exact` scheme: its price, to the seller's wallet, in USDC. */
export function x402Requirements(
  config: MarketConfig,
  settings: X402Settings,
  order: { amountBaseUnits: bigint; payTo: Address },
): PaymentRequirements {
  const domain = settings.tokenDomain ?? usdcDomain(config.chain.chainId)
  return {
    scheme: 'exact',
    network: x402Network(config),
    asset: getAddress(config.chain.usdcContract),
    amount: order.amountBaseUnits.toString(),
    payTo: getAddress(order.payTo),
    maxTimeoutSeconds: settings.maxTimeoutSeconds ?? 300,
    extra: { name: domain.name, version: domain.version },
  }
}

/** The PAYMENT-REQUIRED header value: the requirements of one resource, and why they are asked again (`error`). */
export async function paymentRequiredHeader(
  requirements: PaymentRequirements,
  resource: { url: string; description: string },
  error?: string,
): Promise<string> {
  const [{ encodePaymentRequiredHeader }] = await loadX402()
  return encodePaymentRequiredHeader(paymentRequired(requirements, resource, error))
}

/** The PaymentRequired (x402 v2) of one resource: its one offer, and why it is asked again (`error`). */
export function paymentRequired(
  requirements: PaymentRequirements,
  resource: { url: string; description: string },
  error?: string,
): PaymentRequired {
  return {
    x402Version: 2,
    ...(error ? { error } : {}),
    resource: { ...resource, mimeType: 'application/json' },
    accepts: [requirements],
  }
}

/** The PAYMENT-RESPONSE header value of a settlement. */
export async function paymentResponseHeader(settled: SettleResponse): Promise<string> {
  const [{ encodePaymentResponseHeader }] = await loadX402()
  return encodePaymentResponseHeader(settled)
}

/** An `exact` EVM authorization as a payload carries it. */
export type Eip3009Authorization = {
  from: Address
  to: Address
  value: string
  validAfter: string
  validBefore: string
  nonce: Hex
}

/**
 * EIP-3009's `transferWithAuthorization`, as a settlement calls it: an ECDSA signature split (v, r, s), or any other (a
 * contract wallet's) as bytes.
 */
export const TRANSFER_WITH_AUTHORIZATION_ABI = parseAbi([
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
])

/** The payload of a PAYMENT-SIGNATURE header (x402 v2, `exact` with an EIP-3009 authorization), or null. */
export async function decodeX402Payment(
  header: string,
): Promise<{ payload: PaymentPayload; authorization: Eip3009Authorization } | null> {
  const [{ decodePaymentSignatureHeader }] = await loadX402()
  let decoded: unknown
  try {
    decoded = decodePaymentSignatureHeader(header.trim())
  } catch {
    return null
  }
  return parseX402Payment(decoded)
}

/** A payment payload object (x402 v2, `exact` with an EIP-3009 authorization) checked for its shape, or null. */
export async function parseX402Payment(
  decoded: unknown,
): Promise<{ payload: PaymentPayload; authorization: Eip3009Authorization } | null> {
  const [, { parsePaymentPayload }] = await loadX402()
  const parsed = parsePaymentPayload(decoded)
  if (!parsed.success || parsed.data.x402Version !== 2) return null
  const payload = parsed.data as PaymentPayload
  // Only the EIP-3009 form: a payload carrying anything else (a Permit2 authorization) is not one we claim and judge.
  const { authorization, signature, ...other } = payload.payload as {
    authorization?: Record<string, unknown>
    signature?: unknown
  }
  if (Object.keys(other).length > 0 || !isEip3009Authorization(authorization)) return null
  if (typeof signature !== 'string' || !/^0x[0-9a-fA-F]+$/.test(signature)) return null
  return { payload, authorization }
}

const UINT = /^(0|[1-9][0-9]{0,77})$/

/** True when `value` has an EIP-3009 authorization's fields, each well formed. */
function isEip3009Authorization(value: Record<string, unknown> | undefined): value is Eip3009Authorization {
  if (!value || Object.keys(value).length !== 6) return false
  const { from, to, value: amount, validAfter, validBefore, nonce } = value
  return (
    typeof from === 'string' &&
    isAddress(from) &&
    typeof to === 'string' &&
    isAddress(to) &&
    [amount, validAfter, validBefore].every((field) => typeof field === 'string' && UINT.test(field)) &&
    typeof nonce === 'string' &&
    /^0x[0-9a-fA-F]{64}$/.test(nonce)
  )
}

/**
 * True when the requirements a payload says it accepted are this order's (scheme, network, token, amount, payee,
 * timeout, token domain): a payment made for another price, payee or token does not pay this order.
 */
export function acceptsOrder(accepted: PaymentRequirements, required: PaymentRequirements): boolean {
  const extra = accepted.extra ?? {}
  return (
    accepted.scheme === required.scheme &&
    accepted.network === required.network &&
    isAddress(accepted.asset) &&
    isAddressEqual(accepted.asset, required.asset as Address) &&
    isAddress(accepted.payTo) &&
    isAddressEqual(accepted.payTo, required.payTo as Address) &&
    accepted.amount === required.amount &&
    accepted.maxTimeoutSeconds === required.maxTimeoutSeconds &&
    extra.name === required.extra.name &&
    extra.version === required.extra.version
  )
}

/** Seconds past an authorization's validBefore during which its settlement is still watched (clocks differ). */
export const AUTHORIZATION_SLACK_SECONDS = 120

/**
 * The key that claims one authorization (its payer and nonce) for one task, across every process. Kept until the
 * authorization can no longer be settled (validBefore and AUTHORIZATION_SLACK_SECONDS past); the chain refuses it then.
 */
export const authorizationKey = (authorization: Eip3009Authorization) =>
  `x402:authorization:${authorization.from.toLowerCase()}:${authorization.nonce.toLowerCase()}`

/** The key that says a settlement transaction carries an authorization of `payer` (read by payment re-checks). */
export const settlementKey = (txHash: Hex) => `x402:settlement:${txHash.toLowerCase()}`
