import { afterAll, beforeAll } from 'bun:test'
import type { X402Facilitator } from '@agentmarket/core'
import { viemChain, viemX402Facilitator } from '@agentmarket/core/viem'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { authorizationTypes } from '@x402/evm'
import { registerExactEvmScheme } from '@x402/evm/exact/client'
import { x402Client } from '@x402/fetch'
import { type Address, type Hex, type LocalAccount, toHex } from 'viem'
import type { HDAccount } from 'viem/accounts'
import type { TestAppOptions } from '../../packages/server/src/testing/http.ts'
import { type Anvil, paymentChain } from './anvil.ts'

/** What a test changes in an authorization it signs (to bend it as an attacker would); the rest fits the offer. */
export type AuthorizationChange = {
  to?: Address
  value?: bigint
  validAfter?: bigint
  validBefore?: bigint
  nonce?: Hex
  chainId?: number
  domainName?: string
}

/** An EIP-3009 authorization's fields, as it is signed. */
export type Authorization = {
  from: Address
  to: Address
  value: bigint
  validAfter: bigint
  validBefore: bigint
  nonce: Hex
}

/** The official x402 client (v2), paying with `account` on Base (chain 8453) only. */
export function x402Payer(account: LocalAccount): x402Client {
  const client = new x402Client()
  registerExactEvmScheme(client, { signer: account, networks: ['eip155:8453'] })
  return client
}

/**
 * An EIP-3009 authorization of `accepted` signed by `from`, as the exact scheme's payload carries it, with the
 * library's own typed data (`authorizationTypes`); `change` bends any field, the domain's name or its chain.
 */
export async function signedPayment(
  accepted: PaymentRequirements,
  from: LocalAccount,
  change: AuthorizationChange = {},
): Promise<PaymentPayload> {
  const authorization: Authorization = {
    from: from.address,
    to: change.to ?? (accepted.payTo as Address),
    value: change.value ?? BigInt(accepted.amount),
    validAfter: change.validAfter ?? 0n,
    validBefore: change.validBefore ?? BigInt(Math.floor(Date.now() / 1000)) + 300n,
    nonce: change.nonce ?? toHex(crypto.getRandomValues(new Uint8Array(32))),
  }
  const signature = await from.signTypedData({
    domain: {
      name: change.domainName ?? String(accepted.extra.name),
      version: String(accepted.extra.version),
      chainId: change.chainId ?? 8453,
      verifyingContract: accepted.asset as Address,
    },
    types: authorizationTypes,
    primaryType: 'TransferWithAuthorization',
    message: authorization,
  })
  return payloadOf(accepted, authorization, signature)
}

/** The payload of an authorization (its fields as strings) and its signature. */
export function payloadOf(
  accepted: PaymentRequirements,
  authorization: Authorization,
  signature: Hex,
): PaymentPayload {
  return {
    x402Version: 2,
    accepted,
    payload: {
      authorization: Object.fromEntries(
        Object.entries(authorization).map(([key, value]) => [key, String(value)]),
      ),
      signature,
    },
  }
}

/** An x402 facilitator that records being asked (`calls`: verify, settle) and pays nothing. */
export function recordingFacilitator() {
  const calls: string[] = []
  const facilitator: X402Facilitator = {
    verify: async () => {
      calls.push('verify')
      return { isValid: false, invalidReason: 'recorded_only' }
    },
    settle: async () => {
      calls.push('settle')
      throw new Error('nothing is settled here')
    },
  }
  return { facilitator, calls }
}

/** The x402 chain of a suite: anvil with USDC, a funded `buyer`, a `seller` and the facilitator's `settler`. */
export type X402Chain = { anvil: Anvil; buyer: HDAccount; seller: HDAccount; settler: HDAccount }

/** Starts an x402 chain before the enclosing suite's (or file's) tests and stops it after them; read it in tests. */
export function x402ChainForSuite(): X402Chain {
  const chain = {} as X402Chain
  beforeAll(async () => {
    const started = await paymentChain(['buyer', 'seller', 'settler'], { funded: ['buyer'] })
    Object.assign(chain, { anvil: started.anvil, ...started.accounts })
  })
  afterAll(() => chain.anvil?.stop())
  return chain
}

/** testApp options of a market taking x402 on `chain`'s anvil, its settler settling, after `minConfirmations`. */
export function x402AppOptions(chain: X402Chain, minConfirmations = 1) {
  const { anvil, settler } = chain
  return {
    chain: viemChain({ rpcUrl: anvil.rpcUrl, timeoutMs: 10_000 }),
    chainConfig: { minConfirmations },
    x402: {
      facilitator: viemX402Facilitator({ rpcUrl: anvil.rpcUrl, chain: anvil.chain, account: settler }),
    },
  } satisfies TestAppOptions
}
