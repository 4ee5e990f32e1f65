/**
 * x402's own reference server for bench/reference.ts: a Hono app whose paid route is guarded by `@x402/hono`'s
 * `paymentMiddleware`, its facilitator `@x402/core`'s `x402Facilitator` with `@x402/evm`'s `exact` scheme, in this
 * process (no facilitator URL: it verifies and settles on the chain itself, as agentmarket does), as x402's
 * documentation sets them up. The paid handler answers a small JSON body.
 * Env: PORT, RPC_URL (an anvil with the mock USDC at Base's address, chain id 8453), SETTLER_KEY (pays the gas),
 * PAY_TO (the seller's address), PRICE (dollars, e.g. 0.01). bench/x402Profile.ts builds the same app in its process
 * (`referenceX402App`) to time its paid route beside agentmarket's.
 */
import { x402Facilitator } from '@x402/core/facilitator'
import type { FacilitatorClient } from '@x402/core/server'
import { toFacilitatorEvmSigner } from '@x402/evm'
import { ExactEvmScheme as FacilitatorExactEvmScheme } from '@x402/evm/exact/facilitator'
import { ExactEvmScheme } from '@x402/evm/exact/server'
import { paymentMiddleware, x402ResourceServer } from '@x402/hono'
import { Hono } from 'hono'
import {
  type Address,
  createWalletClient,
  defineChain,
  type Hex,
  http,
  nonceManager,
  publicActions,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'

const NETWORK = 'eip155:8453'

/** What the reference server sells and where it settles. */
export type ReferenceX402Options = {
  /** An anvil with the mock USDC at Base's address (chain id 8453). */
  rpcUrl: string
  /** The key of the account that pays the settlements' gas. */
  settlerKey: Hex
  /** The seller's address. */
  payTo: Address
  /** Dollars, e.g. 0.01. */
  price: string
}

/** The reference Hono app: `POST /skill` behind `@x402/hono`'s `paymentMiddleware`, the facilitator in process. */
export function referenceX402App(options: ReferenceX402Options): Hono {
  const chain = defineChain({
    id: 8453,
    name: 'Base (anvil)',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [options.rpcUrl] } },
  })
  // viem's nonce manager: settlements run concurrently from one account, as a facilitator's do.
  const account = privateKeyToAccount(options.settlerKey, { nonceManager })
  // Receipts polled every 250 ms, as agentmarket's settler does by default: viem's default for a chain without a block
  // time is 4 s, which would measure viem's wait rather than the server when anvil answers a send before storing its block.
  const client = createWalletClient({
    account,
    chain,
    pollingInterval: 250,
    transport: http(options.rpcUrl, { retryCount: 0 }),
  }).extend(publicActions)
  const facilitator = new x402Facilitator().register(
    NETWORK,
    new FacilitatorExactEvmScheme(toFacilitatorEvmSigner({ ...client, address: account.address } as never)),
  )
  // The facilitator in-process, behind the interface the resource server calls (an HTTP facilitator's, without HTTP).
  const local: FacilitatorClient = {
    verify: (payload, requirements) => facilitator.verify(payload, requirements),
    settle: (payload, requirements) => facilitator.settle(payload, requirements),
    getSupported: async () => facilitator.getSupported() as never,
  }
  const server = new x402ResourceServer(local).register(NETWORK, new ExactEvmScheme())

  const app = new Hono()
  app.get('/health', (c) => c.text('ok'))
  app.use(
    paymentMiddleware(
      {
        'POST /skill': {
          accepts: { scheme: 'exact', price: `$${options.price}`, network: NETWORK, payTo: options.payTo },
          description: 'Summary: the same paid skill agentmarket sells',
          mimeType: 'application/json',
        },
      },
      server,
    ),
  )
  app.post('/skill', async (c) =>
    c.json({ status: 'paid', params: ((await c.req.json()) as { params?: unknown }).params }),
  )
  return app
}

if (import.meta.main) {
  const env = (name: string) => {
    const value = process.env[name]
    if (!value) throw new Error(`x402Hono: ${name} is not set`)
    return value
  }
  const app = referenceX402App({
    rpcUrl: env('RPC_URL'),
    settlerKey: env('SETTLER_KEY') as Hex,
    payTo: env('PAY_TO') as Address,
    price: env('PRICE'),
  })
  Bun.serve({ port: Number(env('PORT')), hostname: '127.0.0.1', fetch: app.fetch })
}
