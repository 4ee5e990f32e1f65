import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { viemChain } from '@agentmarket/core/viem'
import { type Address, getAddress, type Hex } from 'viem'
import type { HDAccount } from 'viem/accounts'
import { JOB_ESCROW_ABI, jobIdOf, jobStepData } from '../../packages/core/src/payments/JobEscrow.ts'
import { expectProblemShape, testApp } from '../../packages/server/src/testing/http.ts'
import { type Anvil, paymentChain } from '../support/anvil.ts'
import { changedFundData } from '../support/jobEscrow.ts'
import { signPayerProof } from '../support/payer.ts'

// Attacks (issue 37, found by a second independent attack on main) on when a job escrow funding pays its task. The
// market starts the seller's SLA when it marks the task paid, but the contract's deadline is the funding's own. A
// buyer that funded with a deadline just past the SLA and held its verify-payment back until the deadline had passed
// was answered 200 paid, already overdue: the seller's complete was 409 task_overdue, claimRefund returned all the
// money, and the task ended late on the seller's on-time ratio. Verified after its own claimRefund, the funding paid a
// task whose money was gone ("held" forever). A funding now pays only while its deadline leaves the whole SLA from
// the moment the market judges it (verify-payment and the follower alike), and a job counts late only when its seller
// had the whole SLA after it was marked paid. Driven through the HTTP routes, the follower and anvil's escrow.

// biome-ignore lint/suspicious/noExplicitAny: JSON answers are asserted field by field
type Json = any
type Call = { step: string; to: Address; data: Hex }

const PRICE = 2_500_000n // 2.5 USDC
const SLA = 600
const REVIEW = 1800
const ALLOWANCE = 10n ** 12n

let anvil: Anvil
let jobEscrow: Address
let buyer: HDAccount
let seller: HDAccount
let stranger: HDAccount

beforeAll(async () => {
  const chain = await paymentChain(['buyer', 'seller', 'stranger'], { funded: ['buyer', 'stranger'] })
  ;({ anvil } = chain)
  ;({ buyer, seller, stranger } = chain.accounts)
  jobEscrow = getAddress((await anvil.deployJobEscrow()).address)
  for (const account of [buyer, stranger]) await anvil.approveUsdc(account, jobEscrow, ALLOWANCE)
})

afterAll(() => anvil?.stop())

const chainSeconds = async () => (await anvil.publicClient.getBlock()).timestamp

/** A market on anvil following the job escrow, its clock the chain's, with a seller of one reviewed skill. */
async function jobMarket() {
  const block = await anvil.publicClient.getBlock()
  const app = await testApp(new Date(Number(block.timestamp) * 1000).toISOString(), {
    chain: viemChain({ rpcUrl: anvil.rpcUrl, timeoutMs: 10_000 }),
    chainConfig: { jobEscrowContract: jobEscrow, jobEscrowStartBlock: block.number },
  })
  const registered = await app.register('seller', {
    skills: [{ name: 'Essay', type: 'purchasable', price: '2.5', sla_seconds: SLA, review_seconds: REVIEW }],
  })
  await app.call('PUT', '/api/agents/seller', {
    key: registered.key,
    body: { walletAddress: seller.address },
  })
  /** An order of the essay, naming `buyerWallet` when given. */
  const order = async (buyerWallet?: Address) => {
    const created = await app.call('POST', '/api/agents/seller/tasks', {
      body: { skill: 'essay', ...(buyerWallet && { buyer_wallet: buyerWallet }) },
    })
    expect(created.status).toBe(201)
    const id: string = created.json.task_id
    const path = `/api/agents/seller/tasks/${id}`
    const read = async (): Promise<Json> => (await app.call('GET', path)).json
    const fundCall = async (): Promise<Call> =>
      (await read()).escrow_job.calls.find((call: Call) => call.step === 'fund')
    /** The offered fund call with its deadline set to `deliverBy`. */
    const fundBy = async (deliverBy: bigint) => {
      const offered = await fundCall()
      return { to: offered.to, data: changedFundData(offered.data, { deliverBy }) }
    }
    const proof = created.json.payment.payer_proof
    /** verify-payment of `hash`, signed by `payer` over the task's payer_proof. */
    const verify = async (payer: HDAccount, hash: Hex) =>
      app.call('POST', `${path}/verify-payment`, {
        body: { tx_hash: hash, payer_signature: await signPayerProof(payer, proof, hash) },
      })
    /** The job's claimRefund call (its key is the client's), as anyone may send it past deliverBy. */
    const claimRefund = async (client: HDAccount) => {
      const key = (await anvil.publicClient.readContract({
        address: jobEscrow,
        abi: JOB_ESCROW_ABI,
        functionName: 'keyOf',
        args: [client.address, jobIdOf(id)],
      })) as Hex
      return { key, call: { to: jobEscrow, data: jobStepData('claimRefund', key) } }
    }
    return { id, path, read, fundCall, fundBy, verify, claimRefund }
  }
  /** Sends a call, mines the confirmations and (unless told not to) lets the follower run. */
  const send = async (account: HDAccount, call: { to: Address; data: Hex }, follow = true) => {
    const receipt = await anvil.sendCall(account, call, 1_000_000n)
    await anvil.mine(2)
    if (follow) await app.market.followJobEscrow()
    return receipt
  }
  /** Moves the chain's and the market's clocks together by `seconds`. */
  const wait = async (seconds: number) => {
    await anvil.testClient.increaseTime({ seconds })
    await anvil.mine(1)
    app.clock.set(new Date(Number(await chainSeconds()) * 1000))
  }
  const profile = async () => (await app.call('GET', '/api/community/agents/seller')).json.deliveries
  return { ...app, key: registered.key, order, send, wait, profile }
}

describe('a job funding pays its task only while the seller has its whole SLA (anvil)', () => {
  test('attack: a buyer funds with deliverBy = block time + SLA + 3 and verifies after the deadline: 422, the task stays unpaid, the refund leaves the seller untouched', async () => {
    const market = await jobMarket()
    const task = await market.order()
    const deliverBy = (await chainSeconds()) + BigInt(SLA) + 3n
    const funding = await market.send(buyer, await task.fundBy(deliverBy))
    expect(funding.status).toBe('success')
    // Legal on the contract and at funding time; the buyer holds its verify-payment back past the deadline.
    await market.wait(SLA + 10)
    const verified = await task.verify(buyer, funding.transactionHash)
    expectProblemShape(verified, 422, 'job_terms_mismatch')
    expect(verified.json.detail).toContain('from now, when the market would mark the task paid')
    expect(await task.read()).toMatchObject({ status: 'pending_payment', money: 'none', due_at: null })
    // The seller has nothing to deliver; the buyer's money comes back with claimRefund (anyone's), as it would have.
    const before = await anvil.usdcOf(buyer.address)
    const { call } = await task.claimRefund(buyer)
    expect((await market.send(stranger, call)).status).toBe('success')
    expect(await anvil.usdcOf(buyer.address)).toBe(before + PRICE)
    expect(await task.read()).toMatchObject({ status: 'pending_payment', money: 'none' })
    expect(await market.profile()).toMatchObject({ onTime: 0, late: 0, refunds: 0 })
  })

  test('attack: a verify-payment after part of the SLA passed is refused; the offered call verified within its hour of slack pays', async () => {
    const market = await jobMarket()
    // The offered call's deadline is now + SLA + 3600: verified 3601 s later it leaves SLA - 1 seconds.
    const late = await market.order()
    const lateFunding = await market.send(buyer, await late.fundCall())
    await market.wait(3601)
    expectProblemShape(await late.verify(buyer, lateFunding.transactionHash), 422, 'job_terms_mismatch')
    expect(await late.read()).toMatchObject({ status: 'pending_payment', money: 'none' })
    // Verified with exactly the SLA left (the market's clock on a whole second), it pays, due in SLA seconds.
    const honest = await market.order()
    const offered = await honest.fundCall()
    const offeredAt = market.clock.now().getTime()
    const funding = await market.send(stranger, offered)
    market.clock.set(new Date(offeredAt + 3600_000))
    const verified = await honest.verify(stranger, funding.transactionHash)
    expect(verified.status).toBe(200)
    expect(verified.json.task).toMatchObject({ status: 'paid', money: 'held' })
    expect(Date.parse(verified.json.task.due_at) - market.clock.now().getTime()).toBe(SLA * 1000)
  })

  test('defence: a follower running late pays a named funding made in time; the seller, left less than its SLA, is never counted late', async () => {
    const market = await jobMarket()
    const task = await market.order(buyer.address)
    const deliverBy = (await chainSeconds()) + BigInt(SLA) + 3n
    // The follower does not run until the deadline passed (a market down, or its passes behind).
    const funding = await market.send(buyer, await task.fundBy(deliverBy), false)
    expect(funding.status).toBe('success')
    await market.wait(SLA + 10)
    await market.market.followJobEscrow()
    // The funding was valid when made: the task records the buyer's money, due at the funding's deadline.
    const paid = await task.read()
    expect(paid).toMatchObject({
      status: 'paid',
      money: 'held',
      due_at: new Date(Number(deliverBy) * 1000).toISOString(),
    })
    expect(Date.parse(paid.due_at) - Date.parse(paid.paid_at)).toBeLessThan(SLA * 1000)
    // Anyone sends the claimRefund call the task offers once deliver_by passed.
    const refund = paid.escrow_job.calls.find((call: Call) => call.step === 'claimRefund')
    expect((await market.send(stranger, refund)).status).toBe('success')
    expect(await task.read()).toMatchObject({ status: 'expired', outcome: 'late', money: 'refunded' })
    expect(await market.profile()).toMatchObject({ onTime: 0, late: 0, refunds: 1 })
  })

  test('attack: fund, let deliverBy pass, claimRefund, then verify-payment: 422, nothing held', async () => {
    const market = await jobMarket()
    const task = await market.order()
    const deliverBy = (await chainSeconds()) + BigInt(SLA) + 2n
    const before = await anvil.usdcOf(buyer.address)
    const funding = await market.send(buyer, await task.fundBy(deliverBy))
    await market.wait(SLA + 5)
    const { key, call } = await task.claimRefund(buyer)
    expect((await market.send(buyer, call)).status).toBe('success')
    expect(await anvil.usdcOf(buyer.address)).toBe(before)
    const job = await anvil.publicClient.readContract({
      address: jobEscrow,
      abi: JOB_ESCROW_ABI,
      functionName: 'keyOf',
      args: [buyer.address, jobIdOf(task.id)],
    })
    expect(job).toBe(key)
    expectProblemShape(await task.verify(buyer, funding.transactionHash), 422, 'job_terms_mismatch')
    const read = await task.read()
    expect(read).toMatchObject({ status: 'pending_payment', money: 'none', payment: { from: null } })
    const queue = (await market.call('GET', '/api/agents/seller/tasks?status=paid', { key: market.key })).json
    expect(queue.tasks).toHaveLength(0)
  })

  test('attack: the seller submits on chain before its buyer verifies: 422 job_not_funded, not a task read paid while silence pays the seller', async () => {
    const market = await jobMarket()
    const task = await market.order()
    const funding = await market.send(buyer, await task.fundCall())
    // The seller knows the task id, so it sees its job funded, and submits on it before the market knows the job.
    const { key } = await task.claimRefund(buyer)
    expect(
      (await market.send(seller, { to: jobEscrow, data: jobStepData('submit', key, 'nothing') })).status,
    ).toBe('success')
    const verified = await task.verify(buyer, funding.transactionHash)
    expectProblemShape(verified, 422, 'job_not_funded')
    expect(verified.json.detail).toContain('reject')
    expect(await task.read()).toMatchObject({
      status: 'pending_payment',
      money: 'none',
      payment: { from: null },
    })
    // The buyer, told, rejects on chain within the window and has its money back.
    const before = await anvil.usdcOf(buyer.address)
    expect(
      (await market.send(buyer, { to: jobEscrow, data: jobStepData('reject', key, 'never delivered') }))
        .status,
    ).toBe('success')
    expect(await anvil.usdcOf(buyer.address)).toBe(before + PRICE)
    expect(await market.profile()).toMatchObject({ onTime: 0, late: 0, disputes: 0 })
  })

  test('behavior: a job paid in time and left undelivered past its deadline still counts late', async () => {
    const market = await jobMarket()
    const task = await market.order(buyer.address)
    await market.send(buyer, await task.fundCall())
    expect(await task.read()).toMatchObject({ status: 'paid', money: 'held' })
    await market.wait(SLA + 3601)
    await market.send(stranger, (await task.claimRefund(buyer)).call)
    expect(await task.read()).toMatchObject({ status: 'expired', outcome: 'late', money: 'refunded' })
    expect(await market.profile()).toMatchObject({ onTime: 0, late: 1 })
  })
})
