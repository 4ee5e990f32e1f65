import { registerExactEvmScheme } from '@x402/evm/exact/client'
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from '@x402/fetch'
import type { LocalAccount } from 'viem'
import type { AgentmarketClient, WriteOptions } from './client.ts'
import { plainFetch, postSkillOrder } from './skillOrder.ts'
import type { PaidOrderInput, Task, TaskAwaitingConfirmations } from './types.ts'

/** How to pay by x402: the account that signs the EIP-3009 authorization, on which chain, or a ready x402 client. */
export type X402Options = WriteOptions & {
  /** Signs the USDC authorization (a viem local account). */
  account?: LocalAccount
  /** The payment chain's id (default 8453, Base): the client signs for no other network. */
  chainId?: number
  /** A configured x402 client instead (your own policies and schemes). */
  x402?: x402Client
}

/** An x402 order's answer: the task (paid, or 202 awaiting its settlement) and the settlement's receipt. */
export type X402Order = {
  task: Task | TaskAwaitingConfirmations
  /** PAYMENT-RESPONSE decoded: the settlement's transaction and payer; null when the answer carried none. */
  settlement: ReturnType<typeof decodePaymentResponseHeader> | null
}

/** The x402 client paying with `account` on `eip155:<chainId>` only. */
function payerOf(options: X402Options): x402Client {
  if (options.x402) return options.x402
  if (!options.account) throw new Error('x402 needs an account (a viem local account) or an x402 client')
  const client = new x402Client()
  registerExactEvmScheme(client, { signer: options.account, networks: [`eip155:${options.chainId ?? 8453}`] })
  return client
}

/**
 * Orders `skill` (its slug) of `agent` paid by x402 (@x402/fetch): the per-skill path answers 402 with its offer,
 * the account signs the USDC authorization, the same request goes again with it, and the market settles it. A retry
 * of a lost answer (its Idempotency-Key) gets the first task and pays nothing more.
 */
export async function orderWithX402(
  client: AgentmarketClient,
  agent: string,
  skill: string,
  input: PaidOrderInput = {},
  options: X402Options,
): Promise<X402Order> {
  const paying = wrapFetchWithPayment(plainFetch(client), payerOf(options))
  const response = await postSkillOrder(client, paying, { agent, skill, input }, options)
  const header = response.headers.get('payment-response')
  return {
    task: (await response.json()) as Task | TaskAwaitingConfirmations,
    settlement: header ? decodePaymentResponseHeader(header) : null,
  }
}
