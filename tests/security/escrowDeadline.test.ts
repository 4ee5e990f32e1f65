import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { viemChain } from '@agentmarket/core/viem'
import { type Address, type Hex, keccak256, maxUint256, toHex } from 'viem'
import type { HDAccount } from 'viem/accounts'
import { expectProblemShape, testApp } from '../../packages/server/src/testing/http.ts'
import { type Anvil, ESCROW_ABI, paymentChain } from '../support/anvil.ts'
import { signPayerProof } from '../support/payer.ts'

// Attack (issue 37, an independent attack on main): a buyer pays escrow-first with a deposit whose slaDeadline is
// 2^256-1. The escrow lets the seller claim only after that deadline and has no other way out, so the market marked
// the task paid while the seller's money was held for ever. A deposit now pays only with a deadline at most the
// skill's SLA plus an hour after the market verifies it.

const PRICE = 2_500_000n
const SLA_SECONDS = 3_600
const SLACK_SECONDS = 3_600

let anvil: Anvil
let escrow: Address
let buyer: HDAccount
let seller: HDAccount

beforeAll(async () => {
  const chain = await paymentChain(['buyer', 'seller'], { escrow: true, funded: ['buyer'] })
  ;({ anvil, escrow } = chain)
  ;({ buyer, seller } = chain.accounts)
})

afterAll(() => anvil?.stop())

/** A market whose clock reads the chain's latest block time, with a seller of a 2.5 USDC skill due in an hour. */
async function market() {
  const block = await anvil.publicClient.getBlock()
  const app = await testApp(new Date(Number(block.timestamp) * 1000).toISOString(), {
    chain: viemChain({ rpcUrl: anvil.rpcUrl, timeoutMs: 10_000 }),
    chainConfig: { escrowContract: escrow },
  })
  const registered = await app.register('seller', {
    skills: [{ name: 'Deep Search', type: 'purchasable', price: '2.5', sla_seconds: SLA_SECONDS }],
  })
  await app.call('PUT', '/api/agents/seller', {
    key: registered.key,
    body: { walletAddress: seller.address },
  })
  return { ...app, now: block.timestamp, sellerKey: registered.key }
}

/** Deposits the price for the seller under `taskId` with `slaDeadline`; the hash, final. */
async function deposit(taskId: Hex, slaDeadline: bigint): Promise<Hex> {
  await anvil.approveUsdc(buyer, escrow, PRICE)
  const hash = await anvil.deposit(buyer, escrow, {
    taskId,
    seller: seller.address,
    amount: PRICE,
    slaDeadline,
  })
  await anvil.mine(2)
  return hash
}

describe('escrow-first deposits name a deadline the seller can reach', () => {
  test('attack: a deposit whose slaDeadline is 2^256-1, or an hour past the SLA, pays nothing and changes nothing; the deadline next_steps gives pays, and the seller claims after it', async () => {
    const { call, now, sellerKey } = await market()
    const created = await call('POST', '/api/agents/seller/tasks', { body: { skill: 'deep-search' } })
    expect(created.status).toBe(201)
    const path = `/api/agents/seller/tasks/${created.json.task_id}`
    expect(created.json.next_steps.pay).toContain(
      `slaDeadline being the unix time you send it plus ${SLA_SECONDS}`,
    )
    const before = (await call('GET', path)).json
    const verify = async (hash: Hex) =>
      call('POST', `${path}/verify-payment`, {
        body: {
          tx_hash: hash,
          payer_signature: await signPayerProof(buyer, before.payment.payer_proof, hash),
        },
      })

    const latest = now + BigInt(SLA_SECONDS + SLACK_SECONDS)
    for (const [label, slaDeadline] of [
      ['forever', maxUint256],
      ['a second past the bound', latest + 1n],
    ] as const) {
      const hostage = await deposit(keccak256(toHex(`${created.json.task_id}-${label}`)), slaDeadline)
      const refused = await verify(hostage)
      expectProblemShape(refused, 422, 'escrow_deadline_too_late')
      expect(refused.json.detail).toContain('sla_seconds')
      expect((await call('GET', path)).json).toEqual(before)
      // The seller's queue shows nothing to work on either.
      const queue = await call('GET', '/api/agents/seller/tasks?status=paid', { key: sellerKey })
      expect(queue.json.total).toBe(0)
    }

    const taskId = keccak256(toHex(created.json.task_id))
    const slaDeadline = now + BigInt(SLA_SECONDS)
    const paid = await verify(await deposit(taskId, slaDeadline))
    expect(paid.status).toBe(200)
    expect(paid.json.task).toMatchObject({
      status: 'paid',
      payment: { method: 'escrow', escrow_task_id: taskId },
    })

    // The deadline the market took is one the seller reaches: past it, its claim pays it.
    await anvil.testClient.increaseTime({ seconds: SLA_SECONDS + 1 })
    await anvil.mine(1)
    const balance = await anvil.usdcOf(seller.address)
    const claim = await anvil.walletFor(seller).writeContract({
      address: escrow,
      abi: ESCROW_ABI,
      functionName: 'claim',
      args: [buyer.address, taskId],
    })
    await anvil.publicClient.waitForTransactionReceipt({ hash: claim, pollingInterval: 5 })
    expect(await anvil.usdcOf(seller.address)).toBe(balance + PRICE)
  })
})
