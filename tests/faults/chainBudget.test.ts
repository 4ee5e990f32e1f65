import { afterEach, describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { Message } from '@a2a-js/sdk'
import { viemChain, viemX402Facilitator } from '@agentmarket/core/viem'
import type { PaymentRequired } from '@x402/core/types'
import { wrapFetchWithPayment } from '@x402/fetch'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { base } from 'viem/chains'
import { testApp } from '../../packages/server/src/testing/http.ts'
import { sdkClientVia, sdkMessage, sendForTask } from '../support/a2aClient.ts'
import { type FrozenRpc, frozenRpc } from '../support/frozenRpc.ts'
import { x402Payer } from '../support/x402.ts'

// Issue 39, attack F3: a chain RPC that accepts connections and never answers held an x402 order for about 40 s,
// because each chain call of the order waited its own read bound (10 s). One chain budget per request now bounds them
// all. Nothing here reads a clock: the measure is what the frozen RPC saw, in order.

// Before the fix one order took four read bounds; this bound only ends a hang.
setDefaultTimeout(120_000)

let rpc: FrozenRpc | null = null
afterEach(() => rpc?.stop())

/** A market whose chain reads and x402 settlements all go to a frozen RPC, with a short chain budget per request. */
async function marketOnFrozenChain(frozen: FrozenRpc) {
  const facilitator = viemX402Facilitator({
    rpcUrl: frozen.url,
    chain: base,
    account: privateKeyToAccount(generatePrivateKey()),
  })
  const app = await testApp('2026-06-01T12:00:00.000Z', {
    // Each call's own bound stays the default 10 s; the request's budget is far below it.
    chain: viemChain({ rpcUrl: frozen.url }),
    chainConfig: { requestBudgetMs: 300 },
    x402: { facilitator },
  })
  const { key } = await app.register('seller', {
    skills: [{ name: 'Deep Search', type: 'purchasable', price: '0.5' }],
  })
  const seller = privateKeyToAccount(generatePrivateKey())
  await app.call('PUT', '/api/agents/seller', { key, body: { walletAddress: seller.address } })
  return app
}

/** What the frozen RPC saw from the first call given up on (its connection closed) on, other than closes. */
function startedAfterGivingUp(seen: string[]): string[] {
  const firstClose = seen.indexOf('close')
  return firstClose === -1 ? [] : seen.slice(firstClose).filter((event) => event !== 'close')
}

/** One A2A message from the A2A SDK's client (JSON-RPC) to the seller on `fetchApp`. */
async function a2aSender(fetchApp: typeof fetch) {
  const client = await sdkClientVia(fetchApp, 'JSONRPC', 'http://localhost:3000/api/agents/seller/')
  return (data: unknown, extra: Partial<Message> = {}) => sendForTask(client, sdkMessage(data, extra))
}

describe('one chain budget per request (issue 39, F3)', () => {
  test('fault: an x402 order against a frozen RPC answers 503 chain_unavailable with Retry-After, and no chain call starts once one was given up', async () => {
    rpc = await frozenRpc()
    const app = await marketOnFrozenChain(rpc)
    const fetchApp = ((input: RequestInfo | URL, init?: RequestInit) =>
      app.app.handle(new Request(input, init))) as typeof fetch
    const paying = wrapFetchWithPayment(fetchApp, x402Payer(privateKeyToAccount(generatePrivateKey())))
    const answer = await paying('http://localhost/api/agents/seller/tasks/deep-search', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ params: { q: 'frozen' } }),
    })
    const seen = [...rpc.events]
    expect(answer.status).toBe(503)
    expect(((await answer.json()) as { code: string }).code).toBe('chain_unavailable')
    expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0)
    // The order reached the chain (it was frozen, not skipped)...
    expect(seen).toContain('request')
    // ...and once the request gave up on a call (its connection closed), it started no other: every call that
    // reached the RPC was started before the first was given up. Each call waiting its own bound in turn (before
    // the fix) opens a new connection after each close.
    expect(startedAfterGivingUp(seen)).toEqual([])
  })

  test('fault: an x402 payment inside A2A against a frozen RPC is refused as chain_unavailable within one budget: no chain call starts once one was given up', async () => {
    rpc = await frozenRpc()
    const app = await marketOnFrozenChain(rpc)
    const fetchApp = ((input: RequestInfo | URL, init?: RequestInit) =>
      app.app.handle(new Request(input, init))) as typeof fetch
    const send = await a2aSender(fetchApp)
    const ordered = await send({ skill: 'deep-search', params: { q: 'frozen' } })
    const required = ordered.status?.message?.metadata?.['x402.payment.required'] as PaymentRequired
    const payload = await x402Payer(privateKeyToAccount(generatePrivateKey())).createPaymentPayload(required)
    const paying = send(
      {},
      {
        taskId: ordered.id,
        contextId: ordered.contextId,
        metadata: { 'x402.payment.status': 'payment-submitted', 'x402.payment.payload': payload },
      },
    )
    await expect(paying).rejects.toThrow(/chain_unavailable|unavailable/i)
    const seen = [...rpc.events]
    expect(seen).toContain('request')
    expect(startedAfterGivingUp(seen)).toEqual([])
  })
})
