import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import {
  encodeAbiParameters,
  encodeFunctionData,
  type Hex,
  keccak256,
  pad,
  toEventSelector,
  toHex,
} from 'viem'
import { viemChain } from '../../packages/core/src/adapters/viemChain.ts'
import { ChainUnavailableError } from '../../packages/core/src/errors.ts'
import { DEPOSIT_ABI } from '../../packages/core/src/payments/Escrow.ts'
import { verifyPayments } from '../../packages/core/src/payments/Verifier.ts'
import type { ChainReader } from '../../packages/core/src/ports/Chain.ts'
import { type Anvil, startAnvil, USDC_ABI, USDC_ADDRESS } from '../support/anvil.ts'
import { freePort } from '../support/process.ts'

const TRANSFER_TOPIC = toEventSelector('Transfer(address,address,uint256)')
const UNKNOWN_HASH = keccak256(toHex('never sent'))

let anvil: Anvil
let chain: ChainReader

beforeAll(async () => {
  anvil = await startAnvil()
  await anvil.installUsdc()
  const [, buyer] = anvil.accounts
  if (!buyer) throw new Error('no buyer account')
  await anvil.mintUsdc(buyer.address, 1_000_000_000n)
  chain = viemChain({ rpcUrl: anvil.rpcUrl, timeoutMs: 10_000 })
})

afterAll(() => anvil?.stop())

/** Accounts 1 (buyer) and 2 (seller). */
function parties() {
  const [, buyer, seller] = anvil.accounts
  if (!buyer || !seller) throw new Error('missing anvil accounts')
  return { buyer, seller }
}

/** A JSON-RPC server in front of anvil that counts HTTP requests and JSON-RPC calls. */
function countingProxy(target: string) {
  const counts = { httpRequests: 0, rpcCalls: 0 }
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const body = await request.text()
      counts.httpRequests++
      const parsed: unknown = JSON.parse(body)
      counts.rpcCalls += Array.isArray(parsed) ? parsed.length : 1
      return fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, counts, stop: () => server.stop(true) }
}

/** The error `work` rejects with, and how long it took. */
async function failure(work: Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now()
  try {
    await work
  } catch (error) {
    return { error, ms: performance.now() - started }
  }
  throw new Error('expected a rejection')
}

describe('viemChain', () => {
  test('behavior: headBlock advances after mining', async () => {
    const before = await chain.headBlock()
    await anvil.mine(3)
    expect(await chain.headBlock()).toBe(before + 3n)
  })

  test('behavior: a USDC transfer reads back as a PaymentReceipt, its call data only when asked for', async () => {
    const { buyer, seller } = parties()
    const hash = await anvil.transferUsdc(buyer, seller.address, 10_000n)
    const viemReceipt = await anvil.publicClient.getTransactionReceipt({ hash })

    const [receipt] = await chain.receipts([hash])

    expect(receipt).toEqual({
      transactionHash: hash,
      blockNumber: viemReceipt.blockNumber,
      status: 'success',
      from: buyer.address,
      to: USDC_ADDRESS,
      input: null,
      logs: [
        {
          address: USDC_ADDRESS,
          topics: [
            TRANSFER_TOPIC,
            pad(buyer.address.toLowerCase() as Hex),
            pad(seller.address.toLowerCase() as Hex),
          ],
          data: encodeAbiParameters([{ type: 'uint256' }], [10_000n]),
          logIndex: 0,
        },
      ],
    })
  })

  test('behavior: call data is read for transactions to an address asked for, in a second batch', async () => {
    const { buyer, seller } = parties()
    const hash = await anvil.transferUsdc(buyer, seller.address, 10_000n)
    const proxy = countingProxy(anvil.rpcUrl)
    try {
      const counted = viemChain({ rpcUrl: proxy.url })
      const [receipt] = await counted.receipts([hash], { callDataFor: [USDC_ADDRESS] })
      expect(receipt?.input).toBe(
        encodeFunctionData({ abi: USDC_ABI, functionName: 'transfer', args: [seller.address, 10_000n] }),
      )
      expect(proxy.counts).toEqual({ httpRequests: 2, rpcCalls: 2 })
    } finally {
      proxy.stop()
    }
  })

  test('behavior: an unknown hash reads as null next to a known one', async () => {
    const { buyer, seller } = parties()
    const hash = await anvil.transferUsdc(buyer, seller.address, 1n)
    const [unknown, known] = await chain.receipts([UNKNOWN_HASH, hash])
    expect(unknown).toBeNull()
    expect(known?.transactionHash).toBe(hash)
  })

  test('behavior: an empty list asks nothing and returns nothing', async () => {
    expect(await chain.receipts([])).toEqual([])
  })

  test('behavior: a mined transaction that reverted has status reverted and no logs', async () => {
    const { seller } = parties()
    const poor = anvil.accounts[5]
    if (!poor) throw new Error('missing anvil account')
    const hash = await anvil.sendRevertingTransfer(poor, seller.address, 1n)
    const [receipt] = await chain.receipts([hash])
    expect(receipt?.status).toBe('reverted')
    expect(receipt?.logs).toEqual([])
  })

  test('behavior: 50 receipts in one call come back in the order asked', async () => {
    const hashes: Hex[] = []
    for (let index = 0; index < 50; index++)
      hashes.push(await anvil.mintUsdc(USDC_ADDRESS, BigInt(index + 1)))
    const asked = [...hashes.reverse().slice(0, 25), UNKNOWN_HASH, ...hashes.slice(25)]

    const receipts = await chain.receipts(asked)

    expect(receipts.map((receipt) => receipt?.transactionHash ?? null)).toEqual(
      asked.map((hash) => (hash === UNKNOWN_HASH ? null : hash)),
    )
  })

  test('behavior: receipts for 20 hashes share one HTTP request, with the head read of verifyPayments', async () => {
    const { buyer, seller } = parties()
    const hashes: Hex[] = []
    for (let index = 0; index < 20; index++) hashes.push(await anvil.transferUsdc(buyer, seller.address, 1n))
    const proxy = countingProxy(anvil.rpcUrl)
    try {
      const batched = viemChain({ rpcUrl: proxy.url })
      const verdicts = await verifyPayments(
        batched,
        hashes.map((txHash) => ({
          txHash,
          kind: 'transfer' as const,
          expected: { token: USDC_ADDRESS, recipient: seller.address, minAmount: 1n, minConfirmations: 1 },
        })),
      )
      expect(verdicts.every((verdict) => verdict.ok)).toBe(true)
      expect(proxy.counts).toEqual({ httpRequests: 1, rpcCalls: 21 })
    } finally {
      proxy.stop()
    }
  })

  test('behavior: a batch larger than batchSize is split into several HTTP requests', async () => {
    const proxy = countingProxy(anvil.rpcUrl)
    try {
      const small = viemChain({ rpcUrl: proxy.url, batchSize: 10 })
      const receipts = await small.receipts(Array.from({ length: 20 }, () => UNKNOWN_HASH))
      expect(receipts).toEqual(Array.from({ length: 20 }, () => null))
      expect(proxy.counts).toEqual({ httpRequests: 2, rpcCalls: 20 })
    } finally {
      proxy.stop()
    }
  })

  test('behavior: verifyPayments judges a real transfer pending, then ok at 3 confirmations', async () => {
    const { buyer, seller } = parties()
    const hash = await anvil.transferUsdc(buyer, seller.address, 250_000n)
    const check = {
      txHash: hash,
      kind: 'transfer' as const,
      expected: {
        token: USDC_ADDRESS,
        recipient: seller.address,
        minAmount: 250_000n,
        sender: buyer.address,
        minConfirmations: 3,
      },
    }

    expect(await verifyPayments(chain, [check])).toEqual([
      { ok: false, reason: 'pending', retryable: true, confirmations: 1, required: 3 },
    ])
    await anvil.mine(2)
    const [verdict] = await verifyPayments(chain, [check])

    expect(verdict).toMatchObject({ ok: true, amount: 250_000n, from: buyer.address, confirmations: 3 })
  })

  test('behavior: an escrow deposit is judged ok with its task id, read from the call input', async () => {
    const { buyer, seller } = parties()
    const escrow = await anvil.deployEscrow()
    const taskId = keccak256(toHex('task-1'))
    await anvil.approveUsdc(buyer, escrow, 500_000n)
    const hash = await anvil.deposit(buyer, escrow, {
      taskId,
      seller: seller.address,
      amount: 500_000n,
      slaDeadline: 4_000_000_000n,
    })

    const [receipt] = await chain.receipts([hash], { callDataFor: [escrow] })
    const [verdict] = await verifyPayments(chain, [
      {
        txHash: hash,
        kind: 'escrow',
        expected: {
          token: USDC_ADDRESS,
          escrow,
          seller: seller.address,
          minAmount: 500_000n,
          sender: buyer.address,
          minConfirmations: 1,
          latestSlaDeadline: 4_000_000_000n,
        },
      },
    ])

    expect(receipt?.input).toBe(
      encodeFunctionData({
        abi: DEPOSIT_ABI,
        functionName: 'deposit',
        args: [taskId, seller.address, 500_000n, 4_000_000_000n],
      }),
    )
    expect(verdict).toMatchObject({ ok: true, amount: 500_000n, from: buyer.address, escrowTaskId: taskId })
  })

  test('error: an RPC on a closed port throws ChainUnavailableError at once', async () => {
    const down = viemChain({ rpcUrl: `http://127.0.0.1:${freePort()}`, timeoutMs: 500 })

    const head = await failure(down.headBlock())
    const receipts = await failure(down.receipts([UNKNOWN_HASH]))

    for (const { error, ms } of [head, receipts]) {
      expect(error).toBeInstanceOf(ChainUnavailableError)
      expect(error).toMatchObject({ name: 'ChainUnavailableError', status: 503, code: 'chain_unavailable' })
      expect(ms).toBeLessThan(500)
    }
  })

  test('error: an RPC that never answers throws ChainUnavailableError after timeoutMs', async () => {
    const silent = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Promise<Response>(() => {}) })
    try {
      const slow = viemChain({ rpcUrl: `http://127.0.0.1:${silent.port}`, timeoutMs: 150 })
      const { error, ms } = await failure(slow.receipts([UNKNOWN_HASH]))
      expect(error).toBeInstanceOf(ChainUnavailableError)
      expect((error as Error).message).toContain('timeout')
      expect(ms).toBeGreaterThanOrEqual(140)
      expect(ms).toBeLessThan(1_000)
    } finally {
      silent.stop(true)
    }
  })

  test('error: an RPC answering HTTP 503 throws ChainUnavailableError without leaking the URL', async () => {
    const failing = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: () => new Response('upstream down', { status: 503 }),
    })
    try {
      const secretUrl = `http://127.0.0.1:${failing.port}/v2/secret-api-key`
      const { error } = await failure(viemChain({ rpcUrl: secretUrl }).headBlock())
      expect(error).toBeInstanceOf(ChainUnavailableError)
      expect((error as Error).message).toContain('HTTP 503')
      expect((error as Error).message).not.toContain('secret-api-key')
    } finally {
      failing.stop(true)
    }
  })

  test('error: a JSON-RPC error from a reachable RPC is not ChainUnavailableError', async () => {
    const refusing = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(request) {
        const calls = (await request.json()) as { id: number }[]
        return Response.json(
          calls.map(({ id }) => ({ jsonrpc: '2.0', id, error: { code: -32602, message: 'invalid params' } })),
        )
      },
    })
    try {
      const strict = viemChain({ rpcUrl: `http://127.0.0.1:${refusing.port}` })
      const { error } = await failure(strict.receipts([UNKNOWN_HASH]))
      expect(error).not.toBeInstanceOf(ChainUnavailableError)
      expect((error as Error).name).toBe('InvalidParamsRpcError')
    } finally {
      refusing.stop(true)
    }
  })
})
