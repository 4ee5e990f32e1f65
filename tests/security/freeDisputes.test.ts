import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { viemChain } from '@agentmarket/core/viem'
import type { Hex } from 'viem'
import { generatePrivateKey, type HDAccount, privateKeyToAccount } from 'viem/accounts'
import { testApp } from '../../packages/server/src/testing/http.ts'
import { type Anvil, paymentChain } from '../support/anvil.ts'
import { signPayerProof } from '../support/payer.ts'

// Attack (issue 37, found by a second independent attack on main): a stranger ordered a seller's FREE skill with a
// review window, naming a fresh wallet as buyer_wallet; after the delivery that wallet signed a rejection, and the
// seller's public profile showed `deliveries.disputes: 1`, for nothing paid, as often as the stranger liked. A buyer of
// a free task may still reject (the task keeps its dispute record, the wallet's own decision history counts it), but a
// dispute counts on the seller's public profile only over money paid. Driven through the HTTP routes; the paid case
// on anvil.

// biome-ignore lint/suspicious/noExplicitAny: JSON answers are asserted field by field
type Json = any
type App = Awaited<ReturnType<typeof testApp>>
type Signer = { signTypedData: HDAccount['signTypedData'] }

const PRICE = 1_000_000n // 1 USDC

/** Orders `skill` of `seller` naming `wallet`, delivers it, and has `wallet` reject it with `reason`. */
async function orderDeliverReject(
  app: App,
  key: string,
  skill: string,
  wallet: Signer & { address: string },
  pay?: (task: Json) => Promise<void>,
) {
  const created = await app.call('POST', '/api/agents/seller/tasks', {
    body: { skill, buyer_wallet: wallet.address },
  })
  expect(created.status).toBe(201)
  const path = `/api/agents/seller/tasks/${created.json.task_id}`
  if (pay) await pay(created.json)
  const delivered = await app.call('POST', `${path}/complete`, {
    key,
    body: { result_url: 'https://example.com/result' },
  })
  expect(delivered.json.status).toBe('delivered')
  const review = (await app.call('GET', path)).json.review
  const reason = 'garbage'
  const signature = await wallet.signTypedData({
    ...review,
    message: { ...review.message, decision: 'reject', reason },
  })
  const rejected = await app.call('POST', `${path}/reject`, { body: { reason, signature } })
  expect(rejected.status).toBe(200)
  expect(rejected.json).toMatchObject({ status: 'rejected', outcome: 'rejected' })
  return { path, rejected: rejected.json }
}

const deliveriesOf = async (app: App) =>
  (await app.call('GET', '/api/community/agents/seller')).json.deliveries

describe('a rejection of a free task is no public dispute', () => {
  test('attack: strangers order a free skill naming fresh wallets and reject each delivery: the profile counts no dispute', async () => {
    const app = await testApp()
    const seller = await app.register('seller', {
      skills: [{ name: 'Free', type: 'free', review_seconds: 600 }],
    })
    const before = (await app.call('GET', '/api/community/agents/seller')).json
    for (let round = 0; round < 3; round += 1) {
      const wallet = privateKeyToAccount(generatePrivateKey())
      const { path, rejected } = await orderDeliverReject(app, seller.key, 'free', wallet)
      // The record stays the task's, as its buyer and seller read it.
      expect(rejected.records).toMatchObject([{ kind: 'dispute', by: 'buyer', wallet: wallet.address }])
      expect((await app.call('GET', path)).json.records).toHaveLength(1)
    }
    const after = (await app.call('GET', '/api/community/agents/seller')).json
    expect(after.deliveries).toMatchObject({ disputes: 0, refunds: 0, completed: 0 })
    expect(after.trustScore).toBe(before.trustScore)
  })
})

describe('a rejection of a paid task is a public dispute (anvil)', () => {
  let anvil: Anvil
  let buyer: HDAccount
  let payee: HDAccount

  beforeAll(async () => {
    const chain = await paymentChain(['buyer', 'payee'], { funded: ['buyer'] })
    ;({ anvil } = chain)
    ;({ buyer, payee } = chain.accounts)
  })

  afterAll(() => anvil?.stop())

  test('behavior: the wallet that paid rejects the delivery: deliveries.disputes counts it', async () => {
    const block = await anvil.publicClient.getBlock()
    const app = await testApp(new Date(Number(block.timestamp) * 1000).toISOString(), {
      chain: viemChain({ rpcUrl: anvil.rpcUrl, timeoutMs: 10_000 }),
    })
    const seller = await app.register('seller', {
      skills: [{ name: 'Essay', type: 'purchasable', price: '1', sla_seconds: 600, review_seconds: 600 }],
    })
    await app.call('PUT', '/api/agents/seller', { key: seller.key, body: { walletAddress: payee.address } })
    const pay = async (task: Json) => {
      const hash: Hex = await anvil.transferUsdc(buyer, payee.address, PRICE)
      await anvil.mine(3)
      const verified = await app.call('POST', `/api/agents/seller/tasks/${task.task_id}/verify-payment`, {
        body: { tx_hash: hash, payer_signature: await signPayerProof(buyer, task.payment.payer_proof, hash) },
      })
      expect(verified.status).toBe(200)
    }
    await orderDeliverReject(app, seller.key, 'essay', buyer, pay)
    expect(await deliveriesOf(app)).toMatchObject({ disputes: 1, completed: 0 })
  })
})
