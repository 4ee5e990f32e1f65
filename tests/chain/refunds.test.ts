import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { viemChain } from '@agentmarket/core/viem'
import type { Hex } from 'viem'
import type { HDAccount } from 'viem/accounts'
import { expectProblemShape, testApp } from '../../packages/server/src/testing/http.ts'
import { type Anvil, paymentChain } from '../support/anvil.ts'
import { signPayerProof } from '../support/payer.ts'

const PRICE = 2_000_000n // 2 USDC

let anvil: Anvil
let buyer: HDAccount
let seller: HDAccount
let stranger: HDAccount

beforeAll(async () => {
  const chain = await paymentChain(['buyer', 'seller', 'stranger'], { funded: ['buyer', 'stranger'] })
  ;({ anvil } = chain)
  ;({ buyer, seller, stranger } = chain.accounts)
})
afterAll(() => anvil?.stop())

/** A market on anvil whose seller sells a 2 USDC skill, and a task the buyer paid by transfer (verified). */
async function paidTask() {
  const app = await testApp('2026-06-01T12:00:00.000Z', {
    chain: viemChain({ rpcUrl: anvil.rpcUrl, timeoutMs: 10_000 }),
  })
  const registered = await app.register('seller', {
    skills: [{ name: 'Essay', type: 'purchasable', price: '2' }],
  })
  await app.call('PUT', '/api/agents/seller', {
    key: registered.key,
    body: { walletAddress: seller.address },
  })
  const order = async () => {
    const created = await app.call('POST', '/api/agents/seller/tasks', { body: { skill: 'essay' } })
    const path = `/api/agents/seller/tasks/${created.json.task_id}`
    const hash = await anvil.transferUsdc(buyer, seller.address, PRICE)
    await anvil.mine(2)
    const signature = await signPayerProof(buyer, created.json.payment.payer_proof, hash)
    const verified = await app.call('POST', `${path}/verify-payment`, {
      body: { tx_hash: hash, payer_signature: signature },
    })
    expect(verified.status).toBe(200)
    return path
  }
  const refund = (path: string, txHash: Hex, key: string | undefined = registered.key) =>
    app.call('POST', `${path}/refund`, { key, body: { tx_hash: txHash, reason: 'could not deliver' } })
  return { ...app, order, refund, path: await order() }
}

describe('refund records of payments made outside the job escrow, on anvil', () => {
  test('behavior: the seller refunds the payer on chain; the task records it (who, when, amount, reason, transaction); the money reads refunded', async () => {
    const { path, refund, call } = await paidTask()
    const hash = await anvil.transferUsdc(seller, buyer.address, PRICE)
    const early = await refund(path, hash)
    expect(early.status).toBe(202)
    expect((await call('GET', path)).json.records).toEqual([])
    await anvil.mine(2)
    const recorded = await refund(path, hash)
    expect(recorded.status).toBe(200)
    expect(recorded.json).toMatchObject({ money: 'refunded', status: 'paid' })
    expect(recorded.json.records).toEqual([
      {
        kind: 'refund',
        by: 'seller',
        wallet: seller.address,
        at: recorded.json.records[0].at,
        amount: 2,
        reason: 'could not deliver',
        tx_hash: hash,
      },
    ])
    const profile = (await call('GET', '/api/community/agents/seller')).json
    expect(profile.deliveries.refunds).toBe(1)
    const history = (await call('GET', '/api/agents/seller/tasks?status=paid')).json
    expect(history.tasks[0]).toMatchObject({ refunds: 1 })
  })

  test("attack: someone else's transfer, a transfer to another wallet, one refund for two tasks, no key: nothing is recorded", async () => {
    const { path, refund, order, call } = await paidTask()
    const fromStranger = await anvil.transferUsdc(stranger, buyer.address, PRICE)
    const toStranger = await anvil.transferUsdc(seller, stranger.address, 1n)
    await anvil.mine(2)
    expectProblemShape(await refund(path, fromStranger), 422, 'wrong_sender')
    expectProblemShape(await refund(path, toStranger), 422, 'wrong_recipient')
    // A second task paid before the refund: one refund transaction still refunds one task only.
    const second = await order()
    // A partial refund is a record too; the money reads refunded only once the records sum to the payment.
    const real = await anvil.transferUsdc(seller, buyer.address, PRICE / 2n)
    await anvil.mine(2)
    expectProblemShape(await refund(path, real, 'amk_not_the_key'), 401, 'unauthorized')
    const partial = await refund(path, real)
    expect(partial.json).toMatchObject({ money: 'released', records: [{ amount: 1 }] })
    expectProblemShape(await refund(second, real), 409, 'tx_already_used')
    expect((await call('GET', second)).json).toMatchObject({ records: [], money: 'released' })
    expect((await call('GET', path)).json.records).toHaveLength(1)
  })
})
