import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { viemChain } from '@agentmarket/core/viem'
import type { Address, Hex, TransactionReceipt } from 'viem'
import type { HDAccount } from 'viem/accounts'
import { expectProblemShape, testApp } from '../../packages/server/src/testing/http.ts'
import { type Anvil, paymentChain } from '../support/anvil.ts'
import { signPayerProof, verifyPayment } from '../support/payer.ts'

const PRICE = 2_500_000n // 2.5 USDC
const SLA = 600 // seconds
const REVIEW = 1800 // seconds

let anvil: Anvil
let jobEscrow: Address
let buyer: HDAccount
let seller: HDAccount
let stranger: HDAccount
/** Gas of each step as the paths below spend it (printed at the end). */
const gas: Record<string, bigint> = {}

beforeAll(async () => {
  const chain = await paymentChain(['buyer', 'seller', 'stranger'], { funded: ['buyer'] })
  ;({ anvil } = chain)
  ;({ buyer, seller, stranger } = chain.accounts)
  const deployed = await anvil.deployJobEscrow()
  jobEscrow = deployed.address
  gas.deploy = deployed.gasUsed
})

afterAll(() => {
  console.log(
    `job escrow gas per step (through the API's calls): ${JSON.stringify(gas, (_, v) => (typeof v === 'bigint' ? Number(v) : v))}`,
  )
  anvil?.stop()
})

type Call = {
  step: string
  from: string
  to: Address
  data: Hex
  notBefore: string | null
  notAfter: string | null
}

/** The chain's clock. */
const chainNow = async () => new Date(Number((await anvil.publicClient.getBlock()).timestamp) * 1000)

/** Moves the chain's clock by `seconds` and mines a block. */
async function wait(seconds: number) {
  await anvil.testClient.increaseTime({ seconds })
  await anvil.mine(1)
}

/** A market on anvil taking job escrow fundings, with a seller of one reviewed skill; its clock is the chain's. */
/** A market following the job escrow, with one order of the essay naming `buyerWallet` (null: none). */
async function market(review = REVIEW, buyerWallet: Address | null = buyer.address) {
  const app = await testApp((await chainNow()).toISOString(), {
    chain: viemChain({ rpcUrl: anvil.rpcUrl, timeoutMs: 10_000 }),
    chainConfig: {
      jobEscrowContract: jobEscrow,
      jobEscrowStartBlock: await anvil.publicClient.getBlockNumber(),
    },
  })
  const registered = await app.register('seller', {
    skills: [{ name: 'Essay', type: 'purchasable', price: '2.5', sla_seconds: SLA, review_seconds: review }],
  })
  await app.call('PUT', '/api/agents/seller', {
    key: registered.key,
    body: { walletAddress: seller.address },
  })
  const created = await app.call('POST', '/api/agents/seller/tasks', {
    body: { skill: 'essay', ...(buyerWallet && { buyer_wallet: buyerWallet }) },
  })
  expect(created.status).toBe(201)
  const path = `/api/agents/seller/tasks/${created.json.task_id}`
  const read = async () => (await app.call('GET', path)).json
  /** The call of `step` the task offers now. */
  const callOf = async (step: string): Promise<Call> => {
    const call = (await read()).escrow_job?.calls.find((candidate: Call) => candidate.step === step)
    if (!call) throw new Error(`the task offers no ${step} call`)
    return call
  }
  /** Sends the task's `step` call from `account`, mines the confirmations and lets the follower run. */
  const send = async (account: HDAccount, step: string, record = true): Promise<TransactionReceipt> => {
    const receipt = await anvil.sendCall(account, await callOf(step), 300_000n)
    if (record && receipt.status === 'success') gas[step] = receipt.gasUsed
    await anvil.mine(2)
    await app.market.followJobEscrow()
    return receipt
  }
  const fund = async () => {
    await send(buyer, 'approve', false)
    return send(buyer, 'fund')
  }
  const deliver = () =>
    app.call('POST', `${path}/complete`, {
      key: registered.key,
      body: { result_url: 'https://example.com/essay' },
    })
  return { ...app, key: registered.key, task: created.json, path, read, callOf, send, fund, deliver }
}

describe('jobs in the job escrow, on anvil: the API answers each call, the follower moves the task', () => {
  test('behavior: deliver then accept: funded (held), delivered on chain, accepted by the buyer: the seller is paid', async () => {
    const { task, read, send, fund, deliver, call, callOf, path } = await market()
    expect(task.escrow_job).toMatchObject({ contract: jobEscrow, key: null, review_seconds: REVIEW })
    expect(task.escrow_job.calls.map((c: Call) => c.step)).toEqual(['approve', 'fund'])
    expect(task.money).toBe('none')
    const sellerBefore = await anvil.usdcOf(seller.address)
    await fund()
    const funded = await read()
    expect(funded).toMatchObject({
      status: 'paid',
      money: 'held',
      payment: { method: 'job_escrow', from: buyer.address },
    })
    expect(funded.escrow_job.key).toMatch(/^0x[0-9a-f]{64}$/)
    expect(Date.parse(funded.due_at)).toBe(Date.parse(funded.escrow_job.deliver_by))
    // The seller's delivery through the API keeps the result and answers the submit call committing to it.
    const kept = await deliver()
    expect(kept.json).toMatchObject({ status: 'paid' })
    expect((await callOf('submit')).from).toBe('seller')
    await send(seller, 'submit')
    const delivered = await read()
    expect(delivered).toMatchObject({
      status: 'delivered',
      money: 'held',
      result_url: 'https://example.com/essay',
    })
    expect(Date.parse(delivered.review_until) - Date.parse(delivered.delivered_at)).toBe(REVIEW * 1000)
    expect(delivered.escrow_job.calls.map((c: Call) => c.step)).toEqual([
      'complete',
      'reject',
      'claimPayment',
    ])
    // Deciding through the API is refused: the escrow's evaluator decides on chain.
    const accept = await call('POST', `${path}/accept`, { body: { signature: `0x${'11'.repeat(65)}` } })
    expectProblemShape(accept, 409, 'decided_on_chain')
    await send(buyer, 'complete')
    expect(await read()).toMatchObject({ status: 'completed', outcome: 'accepted', money: 'released' })
    expect((await anvil.usdcOf(seller.address)) - sellerBefore).toBe(PRICE)
    const profile = (await call('GET', '/api/community/agents/seller')).json
    expect(profile.deliveries).toMatchObject({ completed: 1, onTime: 1 })
    // Rated by the wallet that funded the job, never by another (the seller's included).
    const { rate } = await read()
    const signed = (account: HDAccount, score: number) =>
      account.signTypedData({ ...rate, message: { ...rate.message, score, comment: 'ok' } })
    for (const account of [stranger, seller]) {
      const forged = await call('POST', `${path}/rating`, {
        body: { score: 5, comment: 'ok', signature: await signed(account, 5) },
      })
      expectProblemShape(forged, 401, 'invalid_signature')
    }
    const rated = await call('POST', `${path}/rating`, {
      body: { score: 4, comment: 'ok', signature: await signed(buyer, 4) },
    })
    expect(rated.json.rating).toMatchObject({ score: 4, wallet: buyer.address })
    const [feedback] = (await call('GET', '/api/agents/seller/ratings')).json.ratings
    expect(feedback.erc8004.feedback.proofOfPayment).toMatchObject({
      fromAddress: buyer.address,
      txHash: funded.payment.tx_hash,
    })
  })

  test('behavior: an order naming no buyer_wallet is paid by its client proving its funding (verify-payment), not by the follower', async () => {
    const { read, fund, call, path, task } = await market(REVIEW, null)
    const funding = await fund()
    // Anyone who saw the fund call in the mempool could have funded the same job id first: the follower waits.
    expect(await read()).toMatchObject({ status: 'pending_payment', money: 'none' })
    const verified = await call('POST', `${path}/verify-payment`, {
      body: {
        tx_hash: funding.transactionHash,
        payer_signature: await signPayerProof(buyer, task.payment.payer_proof, funding.transactionHash),
      },
    })
    expect(verified.status).toBe(200)
    expect(await read()).toMatchObject({
      status: 'paid',
      money: 'held',
      payment: { method: 'job_escrow', from: buyer.address },
      escrow_job: { client: buyer.address, evaluator: buyer.address },
    })
  })

  test('behavior: deliver then reject: the buyer gets the budget back; the task keeps a dispute and a refund record', async () => {
    const { read, send, fund, call } = await market()
    const before = await anvil.usdcOf(buyer.address)
    await fund()
    await send(seller, 'submit')
    const rejection = await send(buyer, 'reject')
    const rejected = await read()
    expect(rejected).toMatchObject({ status: 'rejected', outcome: 'rejected', money: 'refunded' })
    expect(rejected.records.map((r: { kind: string; by: string }) => `${r.kind} by ${r.by}`)).toEqual([
      'dispute by buyer',
      'refund by chain',
    ])
    expect(rejected.records[1]).toMatchObject({ amount: 2.5, tx_hash: rejection.transactionHash })
    expect(await anvil.usdcOf(buyer.address)).toBe(before)
    const profile = (await call('GET', '/api/community/agents/seller')).json
    expect(profile.deliveries).toMatchObject({ disputes: 1, refunds: 1, completed: 0 })
  })

  test('behavior: not delivered by deliver_by: anyone claims the refund after it, never before; the task expires late', async () => {
    const { read, send, fund, call, callOf } = await market()
    const before = await anvil.usdcOf(buyer.address)
    await fund()
    // A third party trying to refund early: the contract refuses, nothing moves.
    const early = await send(stranger, 'claimRefund', false)
    expect(early.status).toBe('reverted')
    expect(await read()).toMatchObject({ status: 'paid', money: 'held' })
    const refund = await callOf('claimRefund')
    expect(refund.from).toBe('anyone')
    await wait(Math.ceil((Date.parse(refund.notBefore ?? '') - (await chainNow()).getTime()) / 1000) + 1)
    // The seller can no longer submit after the deadline.
    expect((await send(seller, 'submit', false)).status).toBe('reverted')
    await send(stranger, 'claimRefund')
    expect(await read()).toMatchObject({ status: 'expired', outcome: 'late', money: 'refunded' })
    expect(await anvil.usdcOf(buyer.address)).toBe(before)
    const profile = (await call('GET', '/api/community/agents/seller')).json
    expect(profile.deliveries).toMatchObject({ late: 1, refunds: 1, onTimeRatio: 0 })
  })

  test('behavior: silence past the review window releases to the seller; the seller claiming before it is refused', async () => {
    const { read, send, fund, callOf } = await market()
    const before = await anvil.usdcOf(seller.address)
    await fund()
    await send(seller, 'submit')
    expect((await send(seller, 'claimPayment', false)).status).toBe('reverted')
    expect(await read()).toMatchObject({ status: 'delivered', money: 'held' })
    const claim = await callOf('claimPayment')
    await wait(Math.ceil((Date.parse(claim.notBefore ?? '') - (await chainNow()).getTime()) / 1000) + 1)
    // Too late for the buyer to reject now.
    expect((await send(buyer, 'reject', false)).status).toBe('reverted')
    await send(stranger, 'claimPayment')
    expect(await read()).toMatchObject({
      status: 'completed',
      outcome: 'accepted_by_silence',
      money: 'released',
    })
    expect((await anvil.usdcOf(seller.address)) - before).toBe(PRICE)
  })

  test('attack: a funding on other terms pays nothing (verify answers why); a funding of another task pays only that task', async () => {
    const first = await market()
    const second = await market()
    await anvil.approveUsdc(buyer, jobEscrow, PRICE * 4n)
    // The first task's fund call, with a review window of 0 instead of the task's.
    const fund = await first.callOf('fund')
    const altered = `${fund.data.slice(0, -64)}${'0'.repeat(64)}` as Hex
    const receipt = await anvil.sendCall(buyer, { to: jobEscrow, data: altered }, 300_000n)
    expect(receipt.status).toBe('success')
    await anvil.mine(2)
    await first.market.followJobEscrow()
    expect(await first.read()).toMatchObject({ status: 'pending_payment', money: 'none' })
    const verify = await verifyPayment(first, first.path, buyer, receipt.transactionHash)
    expectProblemShape(verify, 422, 'job_terms_mismatch')
    // The second task's funding, sent to the first market's task path: it pays the second task only.
    const secondFund = await anvil.sendCall(buyer, await second.callOf('fund'), 300_000n)
    await anvil.mine(2)
    const wrongTask = await verifyPayment(first, first.path, buyer, secondFund.transactionHash)
    expectProblemShape(wrongTask, 422, 'not_an_escrow_deposit')
    await second.market.followJobEscrow()
    expect(await second.read()).toMatchObject({ status: 'paid', money: 'held' })
  })
})
