import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { viemChain } from '@agentmarket/core/viem'
import { type Address, getAddress, type Hex } from 'viem'
import type { HDAccount } from 'viem/accounts'
import { jobStepData } from '../../packages/core/src/payments/JobEscrow.ts'
import { expectProblemShape, testApp } from '../../packages/server/src/testing/http.ts'
import { type Anvil, paymentChain } from '../support/anvil.ts'
import { changedFundData } from '../support/jobEscrow.ts'
import { signPayerProof } from '../support/payer.ts'

// Attack (issue 37, found by an independent attack on main): a buyer's `fund` call of the job escrow sits in the
// mempool before it is mined, and its job id (keccak256 of the task id) is in its calldata. Whoever copies the call
// and gets it mined first from its own wallet funds the same job id on the same terms, as its client and evaluator.
// Before the fix the job follower paid the buyer's task with that funding when the order named no buyer_wallet: the
// copier became payer and evaluator, rejected the delivery for its refund (a dispute against the seller), and the
// buyer's own verify-payment was 409 while its money stayed locked until deliver_by. These tests send the copies
// through anvil's mempool and the market's HTTP routes and follower, as the attacker did.

// biome-ignore lint/suspicious/noExplicitAny: JSON answers are asserted field by field
type Json = any
type Call = { step: string; to: Address; data: Hex }

const PRICE = 2_500_000n // 2.5 USDC
const ALLOWANCE = 10n ** 12n
const GAS = 1_000_000n
const GWEI = 1_000_000_000n

let anvil: Anvil
let jobEscrow: Address
let victim: HDAccount
let observer: HDAccount
let seller: HDAccount
let sellerSock: HDAccount
let owner: HDAccount

beforeAll(async () => {
  const chain = await paymentChain(['victim', 'observer', 'seller', 'sellerSock', 'owner'], {
    funded: ['victim', 'observer', 'seller', 'owner'],
  })
  ;({ anvil } = chain)
  ;({ victim, observer, seller, sellerSock, owner } = chain.accounts)
  jobEscrow = getAddress((await anvil.deployJobEscrow()).address)
  for (const account of [victim, observer, seller, owner])
    await anvil.approveUsdc(account, jobEscrow, ALLOWANCE)
})

afterAll(() => anvil?.stop())

/** A market on anvil following the job escrow, its clock the chain's, with a seller of one reviewed skill. */
async function jobMarket() {
  const block = await anvil.publicClient.getBlock()
  const app = await testApp(new Date(Number(block.timestamp) * 1000).toISOString(), {
    chain: viemChain({ rpcUrl: anvil.rpcUrl, timeoutMs: 10_000 }),
    chainConfig: { jobEscrowContract: jobEscrow, jobEscrowStartBlock: block.number },
  })
  const registered = await app.register('seller', {
    skills: [{ name: 'Essay', type: 'purchasable', price: '2.5', sla_seconds: 600, review_seconds: 1800 }],
  })
  await app.call('PUT', '/api/agents/seller', {
    key: registered.key,
    body: { walletAddress: seller.address },
  })
  /** An order of the essay, naming `buyerWallet` when given. */
  const order = async (buyerWallet?: Address) => {
    const created = await app.call('POST', '/api/agents/seller/tasks', {
      body: {
        skill: 'essay',
        params: { topic: 'victim order' },
        ...(buyerWallet && { buyer_wallet: buyerWallet }),
      },
    })
    expect(created.status).toBe(201)
    const path = `/api/agents/seller/tasks/${created.json.task_id}`
    const read = async (): Promise<Json> => (await app.call('GET', path)).json
    const callOf = async (step: string): Promise<Call> => {
      const call = (await read()).escrow_job?.calls.find((candidate: Call) => candidate.step === step)
      if (!call) throw new Error(`the task offers no ${step} call`)
      return call
    }
    // What the task shows to sign while unpaid (its id, the agent, the market), as its buyer kept it.
    const proof = created.json.payment.payer_proof
    expect(proof.message.task).toBe(created.json.task_id)
    /** verify-payment with `hash`, signed by `payer` over the task's payer_proof. */
    const verify = async (payer: HDAccount, hash: Hex) =>
      app.call('POST', `${path}/verify-payment`, {
        body: {
          tx_hash: hash,
          payer_signature: await signPayerProof(payer, proof, hash),
        },
      })
    return { id: created.json.task_id as string, path, read, callOf, verify }
  }
  /** Sends a call, mines the market's confirmations and lets the follower run. */
  const send = async (account: HDAccount, call: { to: Address; data: Hex }) => {
    const receipt = await anvil.sendCall(account, call, GAS)
    await anvil.mine(2)
    await app.market.followJobEscrow()
    return receipt
  }
  return { ...app, key: registered.key, pairingCode: registered.pairingCode, order, send }
}

/** The fund call as it would be copied out of the mempool, with another evaluator when given. */
function copied(input: Hex, evaluator?: Address): Hex {
  return evaluator ? changedFundData(input, { evaluator }) : input
}

/**
 * The race as a block builder runs it: the buyer's fund call waits in the mempool, `copier` reads it there and sends
 * the same call (evaluator changed when given) with a higher tip, which is mined first. Both get mined; the market's
 * confirmations follow. Returns both hashes; the copy's block precedes the buyer's.
 */
async function frontRun(buyer: HDAccount, fund: Call, copier: HDAccount, evaluator?: Address) {
  const rpc = anvil.publicClient
  await anvil.testClient.setAutomine(false)
  try {
    const tip = { maxFeePerGas: 50n * GWEI, gas: GAS }
    const victimHash = await anvil
      .walletFor(buyer)
      .sendTransaction({ to: fund.to, data: fund.data, maxPriorityFeePerGas: GWEI, ...tip })
    const pending = await rpc.getTransaction({ hash: victimHash })
    const copyHash = await anvil.walletFor(copier).sendTransaction({
      to: pending.to as Address,
      data: copied(pending.input, evaluator),
      maxPriorityFeePerGas: 5n * GWEI,
      ...tip,
    })
    // The builder orders the higher tip first: held back here, the buyer's transaction lands one block later.
    const raw = (await rpc.request({
      method: 'eth_getRawTransactionByHash' as never,
      params: [victimHash] as never,
    })) as Hex
    await anvil.testClient.dropTransaction({ hash: victimHash })
    await anvil.mine(1)
    await anvil.walletFor(buyer).sendRawTransaction({ serializedTransaction: raw })
    await anvil.mine(3)
    for (const hash of [victimHash, copyHash])
      expect((await rpc.getTransactionReceipt({ hash })).status).toBe('success')
    return { victimHash, copyHash }
  } finally {
    await anvil.testClient.setAutomine(true)
  }
}

describe('a copied job funding never pays the task (anvil)', () => {
  test("attack: an observer front-runs the buyer's fund call: the task stays unpaid until the buyer's own verify-payment, which makes it payer and evaluator", async () => {
    const market = await jobMarket()
    const task = await market.order()
    const fund = await task.callOf('fund')
    const { victimHash, copyHash } = await frontRun(victim, fund, observer)
    const blockOf = async (hash: Hex) =>
      (await anvil.publicClient.getTransactionReceipt({ hash })).blockNumber
    expect(await blockOf(copyHash)).toBeLessThan(await blockOf(victimHash))

    // The follower reads both fundings: neither is bound to the order by anything but its public job id.
    await market.market.followJobEscrow()
    expect(await task.read()).toMatchObject({
      status: 'pending_payment',
      money: 'none',
      payment: { from: null },
    })

    // The copy is not the buyer's to claim either: its client is the observer.
    expectProblemShape(await task.verify(victim, copyHash), 422, 'payer_signature_invalid')
    // The buyer proves its funding (its wallet signs the task id, which the observer never saw): it pays.
    const verified = await task.verify(victim, victimHash)
    expect(verified.status).toBe(200)
    const paid = await task.read()
    expect(paid).toMatchObject({
      status: 'paid',
      money: 'held',
      payment: { from: victim.address },
      escrow_job: { client: victim.address, evaluator: victim.address },
    })
    // Another pass of the follower changes nothing.
    await market.market.followJobEscrow()
    expect(await task.read()).toEqual(paid)

    // The seller delivers on the buyer's job; the observer cannot decide it, the buyer can.
    const delivered = await market.call('POST', `${task.path}/complete`, {
      key: market.key,
      body: { result_url: 'https://example.com/essay' },
    })
    expect(delivered.status).toBe(200)
    await market.send(seller, await task.callOf('submit'))
    const key = (await task.read()).escrow_job.key
    const observerReject = await market.send(observer, {
      to: jobEscrow,
      data: jobStepData('reject', key, 'x'),
    })
    expect(observerReject.status).toBe('reverted')
    const sellerBefore = await anvil.usdcOf(seller.address)
    await market.send(victim, await task.callOf('complete'))
    expect((await anvil.usdcOf(seller.address)) - sellerBefore).toBe(PRICE)
    const done = await task.read()
    expect(done).toMatchObject({ status: 'completed', outcome: 'accepted', money: 'released', records: [] })
    const profile = (await market.call('GET', '/api/community/agents/seller')).json.deliveries
    expect(profile).toMatchObject({ disputes: 0, refunds: 0, completed: 1 })
  })

  test('control: with buyer_wallet named, the follower pays the task with the buyer’s funding, not the copy', async () => {
    const market = await jobMarket()
    const task = await market.order(victim.address)
    await frontRun(victim, await task.callOf('fund'), observer)
    await market.market.followJobEscrow()
    expect(await task.read()).toMatchObject({
      status: 'paid',
      payment: { from: victim.address },
      escrow_job: { client: victim.address, evaluator: victim.address },
    })
  })

  test("attack: the seller (who knows the task id) front-runs its buyer from its own wallet or its owner's: the task is not paid by them", async () => {
    const market = await jobMarket()
    const paired = await market.pair('owner', market.pairingCode, owner)
    expect(paired.status).toBeLessThan(300)
    for (const [copier, evaluator] of [
      // The wallet the task pays, naming a wallet of its own as evaluator (the seller itself is refused as one).
      [seller, sellerSock.address],
      // Its owner's proven wallet, as client and evaluator.
      [owner, undefined],
    ] as const) {
      const task = await market.order()
      const { victimHash, copyHash } = await frontRun(victim, await task.callOf('fund'), copier, evaluator)
      await market.market.followJobEscrow()
      expect(await task.read()).toMatchObject({ status: 'pending_payment', money: 'none' })
      const own = await task.verify(copier, copyHash)
      expectProblemShape(own, 422, 'job_funded_by_seller')
      expect(await task.read()).toMatchObject({ status: 'pending_payment', money: 'none' })
      const buyers = await task.verify(victim, victimHash)
      expect(buyers.status).toBe(200)
      expect(await task.read()).toMatchObject({
        status: 'paid',
        payment: { from: victim.address },
        escrow_job: { client: victim.address, evaluator: victim.address },
      })
    }
  })
})
