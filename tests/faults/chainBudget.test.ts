import { afterEach, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Message } from '@a2a-js/sdk'
import { viemChain, viemX402Facilitator } from '@agentmarket/core/viem'
import type { PaymentRequired } from '@x402/core/types'
import { wrapFetchWithPayment } from '@x402/fetch'
import { Mppx as MppxClient, tempo as tempoClient } from 'mppx/client'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { base } from 'viem/chains'
import { testApp } from '../../packages/server/src/testing/http.ts'
import { sdkClientVia, sdkMessage, sendForTask } from '../support/a2aClient.ts'
import { type FrozenRpc, frozenRpc } from '../support/frozenRpc.ts'
import { type MarketServer, startMarketServer } from '../support/process.ts'
import { scriptedTempo, tempoPayer } from '../support/tempo.ts'
import { x402Payer } from '../support/x402.ts'

// Issue 39, attack F3: a chain RPC that accepts connections and never answers held an x402 order for about 40 s,
// because each chain call of the order waited its own read bound (10 s). One chain budget per request now bounds them
// all. Nothing here reads a clock: the measure is what the frozen RPC saw, in order.

// Before the fix one order took four read bounds; this bound only ends a hang.
setDefaultTimeout(120_000)

let rpc: FrozenRpc | null = null
let server: { market: MarketServer; folder: string } | null = null
afterEach(() => {
  rpc?.stop()
  server?.market.stop()
  if (server) rmSync(server.folder, { recursive: true, force: true })
  server = null
})

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

const post = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
})

/**
 * A `bun start` market whose Tempo RPC (TEMPO_RPC_URL, the one way MPP payments reach the chain) is `frozen`, with one
 * seller. The Tempo client is the server's own (serve.ts), so this runs the server, not `testApp`. Its chain budget
 * (2 s) leaves a wide margin on both sides: a request spends milliseconds before its first chain call (so that call is
 * sent), and milliseconds between the budget's end and its answer (8 s before a call's own bound, 10 s, would close it).
 */
async function mppMarketOnFrozenTempo(frozen: FrozenRpc): Promise<string> {
  const folder = mkdtempSync(join(tmpdir(), 'agentmarket-mpp-budget-'))
  const market = await startMarketServer({
    HOME: folder,
    DATABASE_URL: `file:${join(folder, 'market.db')}`,
    TEMPO_RPC_URL: frozen.url,
    CHAIN_REQUEST_BUDGET_MS: '2000',
  })
  server = { market, folder }
  const registered = (await (
    await fetch(
      `${market.base}/api/agents/register`,
      post({ name: 'seller', skills: [{ name: 'Summary', type: 'purchasable', price: '0.01' }] }),
    )
  ).json()) as { apiKey: string }
  await fetch(`${market.base}/api/agents/seller`, {
    ...post({ walletAddress: tempoPayer(1).address }),
    method: 'PUT',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${registered.apiKey}` },
  })
  return `${market.base}/api/agents/seller/tasks/summary`
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

  // The MPP client pays from its own node (a scripted Tempo node in this process); only the market's RPC is frozen.
  for (const mode of ['pull', 'push'] as const)
    test(`fault: an MPP order (${mode} mode) whose Tempo RPC freezes answers 503 chain_unavailable within the request's chain budget, its chain call still held`, async () => {
      rpc = await frozenRpc()
      const url = await mppMarketOnFrozenTempo(rpc)
      const node = scriptedTempo()
      const client = MppxClient.create({
        polyfill: false,
        methods: [
          tempoClient.charge({ account: tempoPayer(2), getClient: () => node.client('client'), mode }),
        ],
      })
      const order = { params: { q: 'frozen' } }
      const credential = await client.createCredential(await fetch(url, post(order)))
      const answer = await fetch(url, post(order, { authorization: credential }))
      const seen = [...rpc.events]
      expect(answer.status).toBe(503)
      expect(((await answer.json()) as { code: string }).code).toBe('chain_unavailable')
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0)
      // The market's verification reached the frozen RPC (pull: its simulation; push: the receipt of the hash)...
      expect(seen).toContain('request')
      expect(startedAfterGivingUp(seen)).toEqual([])
      // ...and the answer came while that call was still held, so it came from the request's budget: a call waiting
      // its own read bound (10 s, the Tempo client without the budgeted transport) is closed by then.
      expect(seen).not.toContain('close')
    })
})
