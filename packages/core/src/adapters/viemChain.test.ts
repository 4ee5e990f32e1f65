import { afterEach, describe, expect, test } from 'bun:test'
import { type Address, encodeAbiParameters, encodeEventTopics, type Hex, parseAbi } from 'viem'
import { ChainUnavailableError } from '../errors.ts'
import { verifyPayments } from '../payments/Verifier.ts'
import { inChainBudget } from '../ports/chainBudget.ts'
import { viemChain } from './viemChain.ts'

const USDC: Address = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'
const SELLER: Address = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
const BUYER: Address = '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359'
const TX = `0x${'ab'.repeat(32)}` as Hex
const TRANSFER = parseAbi(['event Transfer(address indexed from, address indexed to, uint256 value)'])

type Call = { id: number; method: string; params: unknown[] }

const servers: { stop(force: boolean): void }[] = []
afterEach(() => {
  for (const server of servers.splice(0)) server.stop(true)
})

/** A node on 127.0.0.1 answering eth_blockNumber with `head()` and every receipt with `receipt`; it counts calls. */
function node(receipt: unknown, head: () => Response | Hex = () => '0x64') {
  const calls: string[] = []
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const batch = (await request.json()) as Call[]
      calls.push(...batch.map((call) => call.method))
      const answers = []
      for (const { id, method } of batch) {
        if (method !== 'eth_blockNumber') {
          answers.push({ jsonrpc: '2.0', id, result: receipt })
          continue
        }
        const answer = head()
        if (answer instanceof Response) return answer
        answers.push({ jsonrpc: '2.0', id, result: answer })
      }
      return Response.json(answers)
    },
  })
  servers.push(server)
  return { url: `http://127.0.0.1:${server.port}`, calls }
}

/** A receipt as a node sends it: one USDC Transfer log from the buyer to the seller, lowercase addresses. */
function rawReceipt(log: Record<string, unknown> = {}) {
  return {
    transactionHash: TX,
    blockNumber: '0x64',
    status: '0x1',
    from: BUYER.toLowerCase(),
    to: USDC.toLowerCase(),
    logs: [
      {
        address: USDC.toLowerCase(),
        topics: encodeEventTopics({
          abi: TRANSFER,
          eventName: 'Transfer',
          args: { from: BUYER, to: SELLER },
        }),
        data: encodeAbiParameters([{ type: 'uint256' }], [10_000n]),
        logIndex: null,
        removed: false,
        ...log,
      },
    ],
  }
}

const check = {
  txHash: TX,
  kind: 'transfer' as const,
  expected: { token: USDC, recipient: SELLER, minAmount: 10_000n, sender: BUYER, minConfirmations: 1 },
}

describe('viemChain', () => {
  test('behavior: a receipt reads with checksummed addresses, a missing log index as its position', async () => {
    const chain = viemChain({ rpcUrl: node(rawReceipt()).url })
    const [receipt] = await chain.receipts([TX])
    expect(receipt).toMatchObject({
      blockNumber: 100n,
      status: 'success',
      from: BUYER,
      to: USDC,
      input: null,
    })
    expect(receipt?.logs).toMatchObject([{ address: USDC, logIndex: 0 }])
    expect(await verifyPayments(chain, [check])).toMatchObject([{ ok: true, amount: 10_000n, from: BUYER }])
  })

  test('error: a log marked removed (undone by a reorganization) is dropped, so it pays nothing', async () => {
    const chain = viemChain({ rpcUrl: node(rawReceipt({ removed: true })).url })
    const [receipt] = await chain.receipts([TX])
    expect(receipt?.logs).toEqual([])
    expect(await verifyPayments(chain, [check])).toEqual([
      { ok: false, reason: 'wrong_token', retryable: false },
    ])
  })

  test('behavior: head reads made together share one eth_blockNumber; a later one asks again', async () => {
    const server = node(rawReceipt())
    const chain = viemChain({ rpcUrl: server.url })
    const heads = await Promise.all([chain.headBlock(), chain.headBlock(), chain.headBlock()])
    expect(heads).toEqual([100n, 100n, 100n])
    await Promise.all(Array.from({ length: 3 }, () => verifyPayments(chain, [check])))
    expect(server.calls.filter((method) => method === 'eth_blockNumber')).toHaveLength(2)
    await chain.headBlock()
    expect(server.calls.filter((method) => method === 'eth_blockNumber')).toHaveLength(3)
  })

  test('error: a failed head read is ChainUnavailableError and is not kept for the next read', async () => {
    let failing = true
    const server = node(rawReceipt(), () => (failing ? new Response('down', { status: 502 }) : '0x65'))
    const chain = viemChain({ rpcUrl: server.url })
    await expect(chain.headBlock()).rejects.toBeInstanceOf(ChainUnavailableError)
    failing = false
    expect(await chain.headBlock()).toBe(101n)
  })

  test("behavior: a request sharing a head read in flight (a background pass's, on its own bound) gives up on it when the request's chain budget is spent", async () => {
    const frozen = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Promise<Response>(() => {}) })
    servers.push(frozen)
    const chain = viemChain({ rpcUrl: `http://127.0.0.1:${frozen.port}`, timeoutMs: 60_000 })
    let backgroundSettled = false
    const background = chain.headBlock().finally(() => {
      backgroundSettled = true
    })
    const request = inChainBudget(100, () => chain.headBlock())
    await expect(request).rejects.toBeInstanceOf(ChainUnavailableError)
    // The request answered while the read it shared still waits on its own bound.
    expect(backgroundSettled).toBe(false)
    frozen.stop(true)
    await background.catch(() => {})
  })
})
