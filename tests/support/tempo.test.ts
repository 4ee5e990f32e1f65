import { afterEach, describe, expect, spyOn, test } from 'bun:test'
import { Receipt } from 'mppx'
import { Mppx as MppxClient, tempo as tempoClient } from 'mppx/client'
import { Mppx, tempo as tempoServer } from 'mppx/server'
import { createClient, type Hex, http, keccak256, parseEventLogs } from 'viem'
import { getTransactionReceipt } from 'viem/actions'
import { Abis } from 'viem/tempo'
import { type ScriptedTempo, scriptedTempo, TEMPO_USDC_E, tempoPayer } from './tempo.ts'

const seller = tempoPayer(1).address
const stops: Array<() => Promise<void>> = []

afterEach(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()))
})

/** A paid route like the marketplace's: 0.01 USDC.e, scoped to the path, 201 with the payment receipt. */
function shop(node: ScriptedTempo): string {
  const mppx = Mppx.create({
    secretKey: 'tempo-harness-test-secret-of-at-least-32-bytes',
    realm: 'market.test',
    methods: [
      tempoServer.charge({
        currency: TEMPO_USDC_E,
        recipient: seller,
        getClient: () => node.client('server'),
      }),
    ],
  })
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname
      const result = await mppx.charge({ amount: '0.01', scope: path, meta: { route: path } })(request)
      if (result.status === 402) return result.challenge
      return result.withReceipt(Response.json({ paid: path }, { status: 201 }))
    },
  })
  stops.push(async () => server.stop(true))
  return `http://127.0.0.1:${server.port}`
}

function payer(node: ScriptedTempo, mode: 'pull' | 'push') {
  return MppxClient.create({
    polyfill: false,
    methods: [tempoClient.charge({ account: tempoPayer(2), getClient: () => node.client('client'), mode })],
  })
}

function broadcastHashes(node: ScriptedTempo): Hex[] {
  return node.calls
    .filter((call) => call.method === 'eth_sendRawTransactionSync')
    .map((call) => keccak256((call.params as [Hex])[0]))
}

describe('scriptedTempo', () => {
  for (const mode of ['pull', 'push'] as const) {
    test(`behavior: the real mppx client pays a real mppx server in ${mode} mode`, async () => {
      const node = scriptedTempo()
      const base = shop(node)

      const response = await payer(node, mode).fetch(`${base}/api/tasks/t1`, { method: 'POST', body: '{}' })

      expect(response.status).toBe(201)
      expect(await response.json()).toEqual({ paid: '/api/tasks/t1' })
      const paid = Receipt.fromResponse(response)
      const [hash] = broadcastHashes(node)
      expect(paid.status).toBe('success')
      expect(paid.reference).toBe(hash as Hex)
      // pull: the server broadcasts the client's signed tx; push: the client broadcasts, the server reads the receipt.
      const broadcaster = node.calls.find((call) => call.method === 'eth_sendRawTransactionSync')?.side
      expect(broadcaster).toBe(mode === 'pull' ? 'server' : 'client')
      const serverReadReceipt = node.calls.some(
        (call) => call.side === 'server' && call.method === 'eth_getTransactionReceipt',
      )
      expect(serverReadReceipt).toBe(mode === 'push')
    })
  }

  test('behavior: the mined receipt carries Transfer and TransferWithMemo logs for 10000 base units', async () => {
    const node = scriptedTempo()
    const base = shop(node)
    const response = await payer(node, 'pull').fetch(`${base}/api/tasks/t2`, { method: 'POST' })
    const hash = Receipt.fromResponse(response).reference as Hex

    expect(node.receipt(hash)?.status).toBe('0x1')
    const receipt = await getTransactionReceipt(node.client('reader'), { hash })
    const logs = parseEventLogs({ abi: Abis.tip20, logs: receipt.logs })
    const from = tempoPayer(2).address

    expect(receipt.status).toBe('success')
    expect(receipt.blockNumber).toBe(1001n)
    expect(logs.map((log) => log.eventName)).toEqual(['Transfer', 'TransferWithMemo'])
    for (const log of logs) {
      expect(log.address.toLowerCase()).toBe(TEMPO_USDC_E.toLowerCase())
      expect(log.args).toMatchObject({ from, to: seller, amount: 10000n })
    }
  })

  test('behavior: serve() answers eth_chainId and a batch over HTTP, errors as JSON-RPC error objects', async () => {
    const node = scriptedTempo()
    const server = await node.serve()
    stops.push(server.stop)

    const viaViem = createClient({ chain: node.chain, transport: http(server.url, { retryCount: 0 }) })
    expect(await viaViem.request({ method: 'eth_chainId' })).toBe('0x1079')

    const batch = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] },
        { jsonrpc: '2.0', id: 2, method: 'eth_blockNumber', params: [] },
        { jsonrpc: '2.0', id: 3, method: 'eth_nope', params: [] },
      ]),
    }).then((response) => response.json())

    expect(batch).toEqual([
      { jsonrpc: '2.0', id: 1, result: '0x1079' },
      { jsonrpc: '2.0', id: 2, result: '0x3e8' },
      { jsonrpc: '2.0', id: 3, error: { code: -32601, message: expect.stringContaining('eth_nope') } },
    ])
    expect(node.calls.map((call) => `${call.side}:${call.method}`)).toEqual([
      'http:eth_chainId',
      'http:eth_chainId',
      'http:eth_blockNumber',
      'http:eth_nope',
    ])
  })

  test('behavior: failNextBroadcast makes the server answer 500 while the tx is mined anyway', async () => {
    const node = scriptedTempo()
    const base = shop(node)
    node.failNextBroadcast()
    // mppx logs the unexpected RPC failure before mapping it to a 500 problem.
    const quiet = spyOn(console, 'error').mockImplementation(() => {})
    try {
      const response = await payer(node, 'pull').fetch(`${base}/api/tasks/t3`, { method: 'POST' })

      expect(response.status).toBe(500)
      expect(response.headers.has('payment-receipt')).toBe(false)
    } finally {
      quiet.mockRestore()
    }
    const [hash] = broadcastHashes(node)
    expect(node.receipt(hash as Hex)?.status).toBe('0x1')

    const again = await payer(node, 'pull').fetch(`${base}/api/tasks/t4`, { method: 'POST' })
    expect(again.status).toBe(201)
  })

  test('behavior: the failNextBroadcast option arms the first broadcast on testnet and again after reset()', async () => {
    const node = scriptedTempo({ chain: 'testnet', failNextBroadcast: true })
    const base = shop(node)
    expect(node.chain.id).toBe(42431)
    expect(await node.client().request({ method: 'eth_chainId' })).toBe('0xa5bf')
    const quiet = spyOn(console, 'error').mockImplementation(() => {})
    try {
      expect((await payer(node, 'pull').fetch(`${base}/api/tasks/t5`, { method: 'POST' })).status).toBe(500)
      const [hash] = broadcastHashes(node)

      node.reset()

      expect(node.calls).toEqual([])
      expect(node.receipt(hash as Hex)).toBeUndefined()
      expect(await node.transport({ chain: node.chain }).request({ method: 'eth_blockNumber' })).toBe('0x3e8')
      // In push mode the client broadcasts, so the failure reaches the payer, not the server.
      await expect(payer(node, 'push').fetch(`${base}/api/tasks/t6`, { method: 'POST' })).rejects.toThrow(
        'node went away after broadcast',
      )
      const [pushed] = broadcastHashes(node)
      expect(node.receipt(pushed as Hex)?.status).toBe('0x1')
      expect((await payer(node, 'push').fetch(`${base}/api/tasks/t7`, { method: 'POST' })).status).toBe(201)
    } finally {
      quiet.mockRestore()
    }
  })
})
