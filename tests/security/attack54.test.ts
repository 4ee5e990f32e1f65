import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Store, X402Facilitator } from '@agentmarket/core'
import { viemChain, viemX402Facilitator } from '@agentmarket/core/viem'
import { libsqlStore, openDatabase } from '@agentmarket/store-libsql'
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  encodePaymentSignatureHeader,
} from '@x402/core/http'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import type { Hex } from 'viem'
import type { HDAccount } from 'viem/accounts'
import { testApp } from '../../packages/server/src/testing/http.ts'
import { type Anvil, paymentChain } from '../support/anvil.ts'
import { signedPayment } from '../support/x402.ts'

// Stop 54's independent attack on the money paths (x402 sentByOthers, MPP hashes past the expiry, leaks). Each test
// drives in-process apps over a real anvil (x402) or the scripted Tempo node (MPP). A `test.failing` is an attack
// that works today: its comment names the defect.

const PRICE = 500_000n
const SKILL = { name: 'Deep Search', type: 'purchasable', price: '0.5' }
const PATH = '/api/agents/seller/tasks/deep-search'

let anvil: Anvil
let buyer: HDAccount
let seller: HDAccount
let settlerA: HDAccount
let settlerB: HDAccount
let thief: HDAccount

beforeAll(async () => {
  const roles = ['buyer', 'seller', 'settlerA', 'settlerB', 'thief'] as const
  const chain = await paymentChain(roles, { funded: ['buyer', 'thief'] })
  ;({ anvil } = chain)
  ;({ buyer, seller, settlerA, settlerB, thief } = chain.accounts)
})

afterAll(() => anvil?.stop())

const facilitator = (account: HDAccount, receiptTimeoutMs?: number) =>
  viemX402Facilitator({ rpcUrl: anvil.rpcUrl, chain: anvil.chain, account, receiptTimeoutMs })

type Market = Awaited<ReturnType<typeof market>>

/**
 * A market taking x402 on anvil where `seller` sells Deep Search (0.5 USDC) to its wallet; `store` shared makes it a
 * second node of the same market.
 */
async function market(x402: X402Facilitator, node: { store?: Store; second?: boolean } = {}) {
  const app = await testApp('2026-06-01T12:00:00.000Z', {
    chain: viemChain({ rpcUrl: anvil.rpcUrl, timeoutMs: 5_000 }),
    chainConfig: { minConfirmations: 1 },
    x402: { facilitator: x402 },
    ...(node.store ? { store: node.store } : {}),
  })
  if (node.second) return { ...app, key: '', queue: () => Promise.reject(new Error('ask the first node')) }
  const { key } = await app.register('seller', { skills: [SKILL] })
  await app.call('PUT', '/api/agents/seller', { key, body: { walletAddress: seller.address } })
  const queue = async () =>
    (await app.call('GET', '/api/agents/seller/tasks?status=all', { key })).json as {
      total: number
      tasks: { task_id: string; status: string }[]
    }
  return { ...app, key, queue }
}

const newStore = async () => libsqlStore(await openDatabase(':memory:'))

async function offerOf(app: Market, path = PATH): Promise<PaymentRequirements> {
  const answer = await app.call('POST', path, { body: {} })
  expect(answer.status).toBe(402)
  const [accepted] = decodePaymentRequiredHeader(answer.headers.get('payment-required') ?? '').accepts
  if (!accepted) throw new Error('no x402 offer')
  return accepted
}

const payWith = (
  app: Market,
  payload: PaymentPayload,
  options: { path?: string; body?: unknown; headers?: Record<string, string> } = {},
) =>
  app.call('POST', options.path ?? PATH, {
    body: options.body ?? {},
    headers: { 'payment-signature': encodePaymentSignatureHeader(payload), ...options.headers },
  })

/** Our facilitator with `meanwhile` run once between a valid verification and the settlement. */
const frontRun = (inner: X402Facilitator, meanwhile: () => Promise<void>): X402Facilitator => {
  let pending: (() => Promise<void>) | null = meanwhile
  return {
    async verify(payload, requirements) {
      const verdict = await inner.verify(payload, requirements)
      const run = verdict.isValid ? pending : null
      pending = run ? null : pending
      await run?.()
      return verdict
    },
    settle: (...args) => inner.settle(...args),
  }
}

/** Every transaction `account` sent and the chain has not mined, read from the pending block. */
async function pendingFrom(account: HDAccount, count: number) {
  const deadline = performance.now() + 10_000
  while (performance.now() < deadline) {
    const block = await anvil.publicClient.getBlock({ blockTag: 'pending', includeTransactions: true })
    const found = block.transactions.filter(
      (transaction) => transaction.from.toLowerCase() === account.address.toLowerCase(),
    )
    if (found.length >= count) return found
    await Bun.sleep(5)
  }
  throw new Error('no settlement reached the mempool')
}

const settlementOf = (answer: { headers: Headers }) =>
  decodePaymentResponseHeader(answer.headers.get('payment-response') ?? '').transaction as Hex

describe('x402: one authorization, two markets (the seller lists Deep Search on both, one wallet)', () => {
  // DEFECT (sentByOthers, x402Payment.ts): market B verifies the buyer's authorization, then market A (another
  // marketplace, or the seller's own x402 endpoint) settles the very same authorization for its own order. B's fill
  // reverts (nonce used), and sentByOthers records A's transaction as B's settlement: B's order is paid too. One
  // transfer of 0.5 USDC, two paid orders of the seller (the buyer, or an observer who copied the authorization from
  // A's pending settlement, is served twice). Safe: B answers 402 nonce_already_used (the money paid A's order).
  test.failing("attack: the same authorization settled meanwhile by another market for its order pays this market's order too", async () => {
    const appA = await market(facilitator(settlerA))
    let payload: PaymentPayload | null = null
    let paidA: Awaited<ReturnType<typeof payWith>> | null = null
    const appB = await market(
      frontRun(facilitator(settlerB), async () => {
        paidA = await payWith(appA, payload as PaymentPayload)
      }),
    )
    const accepted = await offerOf(appB)
    payload = await signedPayment(accepted, buyer)
    const sellerBefore = await anvil.usdcOf(seller.address)
    const answerB = await payWith(appB, payload, { body: { params: { q: 'the second order' } } })
    expect((paidA as unknown as { status: number }).status).toBe(201)
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
    // One transfer: at most one of the two markets may count it as its order's payment.
    expect(answerB.status, JSON.stringify(answerB.json)).toBe(402)
    expect((await appB.queue()).tasks.filter((task) => task.status === 'paid')).toEqual([])
  })

  test('attack: two nodes of one market (one store): the authorization verified by node 2 is settled meanwhile by node 1 for another order: node 2 answers 409, one order paid', async () => {
    const store = await newStore()
    const node1 = await market(facilitator(settlerA), { store })
    let payload: PaymentPayload | null = null
    let paid1: { status: number } | null = null
    const node2 = await market(
      frontRun(facilitator(settlerB), async () => {
        paid1 = await payWith(node1, payload as PaymentPayload, { body: { params: { q: 'node 1' } } })
      }),
      { store, second: true },
    )
    payload = await signedPayment(await offerOf(node2), buyer)
    const sellerBefore = await anvil.usdcOf(seller.address)
    const answer2 = await payWith(node2, payload, { body: { params: { q: 'node 2' } } })
    expect((paid1 as unknown as { status: number }).status).toBe(201)
    expect(answer2.status, JSON.stringify(answer2.json)).toBe(409)
    expect(answer2.json.code).toBe('authorization_already_used')
    expect(answer2.text).not.toContain('task_')
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
    expect((await node1.queue()).tasks.map((task) => task.status)).toEqual(['paid'])
  })

  // DEFECT (minor, robustness): an authorization whose settlement by another market is in the mempool, sent to this
  // market meanwhile: the market's fill reverts against the pending state ("authorization is used") while the token's
  // latest state still shows the nonce unused, so revertedBecause rethrows the fill's error: 500 internal_error. Safe: a
  // 402 (nonce used / sign a new authorization) or a 503 to retry, never a 500; nothing settled here either way.
  test.failing('attack: an observer copies the pending settlement of market A from the mempool and sends it to market B at once: B answers a problem that is not a 500, and only A is paid', async () => {
    const appA = await market(facilitator(settlerA, 20_000))
    const appB = await market(facilitator(settlerB, 20_000))
    const payload = await signedPayment(await offerOf(appA), buyer)
    const sellerBefore = await anvil.usdcOf(seller.address)
    await anvil.testClient.setAutomine(false)
    let answers: Awaited<ReturnType<typeof payWith>>[] = []
    try {
      const victim = payWith(appA, payload)
      await pendingFrom(settlerA, 1)
      const observer = await payWith(appB, payload, { body: { params: { q: 'observer' } } })
      await anvil.testClient.mine({ blocks: 1 })
      answers = [await victim, observer]
    } finally {
      await anvil.testClient.setAutomine(true)
    }
    const [paidA, answerB] = answers
    expect(paidA?.status).toBe(201)
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
    expect((await appB.queue()).total).toBe(0)
    expect([402, 409, 503], JSON.stringify(answerB?.json)).toContain(answerB?.status ?? 0)
  })
})
