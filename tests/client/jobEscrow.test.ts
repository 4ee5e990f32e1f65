import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Address } from 'viem'
import type { HDAccount } from 'viem/accounts'
import { createClient, type Task } from '../../packages/client/src/index.ts'
import { type Anvil, paymentChain } from '../support/anvil.ts'
import { changedFundData } from '../support/jobEscrow.ts'
import { type MarketServer, startMarketServer } from '../support/process.ts'

// The job escrow through @agentmarket/client as a user runs it: `bun start` following the escrow on anvil
// (JOB_ESCROW_CONTRACT), the buyer funding with payTaskByJob, the seller delivering with deliver({ wallet }), the
// buyer deciding with review(…, wallet) on chain. Balances on chain and the task as the market reads it are the verdicts.

let anvil: Anvil
let buyer: HDAccount
let seller: HDAccount
let server: MarketServer
let jobEscrow: Address
const folder = mkdtempSync(join(tmpdir(), 'client-jobs-'))
const PRICE = 250_000n

beforeAll(async () => {
  const chain = await paymentChain(['buyer', 'seller'], { funded: ['buyer'] })
  ;({ anvil } = chain)
  ;({ buyer, seller } = chain.accounts)
  jobEscrow = (await anvil.deployJobEscrow()).address
  server = await startMarketServer({
    HOME: folder,
    DATABASE_URL: `file:${join(folder, 'market.db')}`,
    CHAIN_RPC_URL: anvil.rpcUrl,
    MIN_CONFIRMATIONS: '1',
    JOB_ESCROW_CONTRACT: jobEscrow,
    JOB_ESCROW_START_BLOCK: String(await anvil.publicClient.getBlockNumber()),
  })
})

afterAll(() => {
  server?.stop()
  anvil?.stop()
  rmSync(folder, { recursive: true, force: true })
})

/** A seller with a paid skill under a review window, registered through the client with its wallet set. */
async function sellerNamed(name: string) {
  const market = createClient({ baseUrl: server.base })
  const registration = await market.register({
    name,
    skills: [{ name: 'Report', type: 'purchasable', price: 0.25, review_seconds: 3600 }],
  })
  const own = market.withApiKey(registration.apiKey)
  await own.updateAgent(name, { walletAddress: seller.address })
  return own
}

/** Orders, pays by the job escrow, has the seller deliver on chain, and waits for the delivery. */
async function deliveredJob(name: string, buyerWallet: Address | undefined) {
  const own = await sellerNamed(name)
  const market = createClient({ baseUrl: server.base })
  const task = (await market.order(name, { skill: 'report', buyer_wallet: buyerWallet })) as Task
  const escrowBefore = await anvil.usdcOf(jobEscrow)
  const paid = await market.payTaskByJob(task, anvil.walletFor(buyer))
  expect(paid).toMatchObject({ status: 'paid', money: 'held' })
  expect(paid.payment).toMatchObject({ method: 'job_escrow', from: buyer.address })
  expect(paid.escrow_job).toMatchObject({ client: buyer.address, evaluator: buyer.address })
  expect(await anvil.usdcOf(jobEscrow)).toBe(escrowBefore + PRICE)
  const url = `https://results.example/${name}`
  await own.deliver(name, task.task_id, url, { wallet: anvil.walletFor(seller) })
  const delivered = await market.waitForTask(name, task.task_id, { intervalMs: 100 })
  expect(delivered).toMatchObject({ status: 'delivered', result_url: url })
  return { market, delivered }
}

describe('@agentmarket/client and the job escrow, against bun start', () => {
  test('behavior: a named buyer funds the job; the market pays the task by itself; the seller submits; the accept on chain pays the seller', async () => {
    const { market, delivered } = await deliveredJob('job-accepted', buyer.address)
    const sellerBefore = await anvil.usdcOf(seller.address)
    // The API refuses a decision on a job in escrow; the client sends it on chain from the evaluator's wallet.
    await expect(market.review(delivered, 'accept', buyer)).rejects.toThrow('decided on chain')
    const accepted = await market.review(delivered, 'accept', anvil.walletFor(buyer))
    expect(accepted).toMatchObject({ status: 'completed', outcome: 'accepted', money: 'released' })
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + PRICE)
  })

  test('behavior: an order naming no wallet is paid by verify-payment with the payer proof; the reject on chain refunds the buyer', async () => {
    const { market, delivered } = await deliveredJob('job-rejected', undefined)
    const buyerBefore = await anvil.usdcOf(buyer.address)
    const rejected = await market.review(delivered, 'reject', anvil.walletFor(buyer), 'another topic')
    expect(rejected).toMatchObject({ status: 'rejected', outcome: 'rejected', money: 'refunded' })
    expect(await anvil.usdcOf(buyer.address)).toBe(buyerBefore + PRICE)
  })

  test('behavior: a served fund call naming another seller or price is refused before any transaction', async () => {
    await sellerNamed('job-forged')
    const market = createClient({ baseUrl: server.base })
    const task = (await market.order('job-forged', { skill: 'report', buyer_wallet: buyer.address })) as Task
    const job = task.escrow_job
    if (!job) throw new Error('the order offers no job escrow funding')
    const forged = (change: Parameters<typeof changedFundData>[1]): Task => ({
      ...task,
      escrow_job: {
        ...job,
        calls: job.calls.map((call) =>
          call.step === 'fund'
            ? { ...call, data: changedFundData(call.data as `0x${string}`, change) }
            : call,
        ),
      },
    })
    const sent = () => anvil.publicClient.getTransactionCount({ address: buyer.address, blockTag: 'pending' })
    const before = await sent()
    const wallet = anvil.walletFor(buyer)
    await expect(market.payTaskByJob(forged({ provider: buyer.address }), wallet)).rejects.toThrow(
      'names another job, seller, price',
    )
    await expect(market.payTaskByJob(forged({ budget: PRICE * 100n }), wallet)).rejects.toThrow(
      'names another job, seller, price',
    )
    await expect(market.payTaskByJob(forged({ evaluator: seller.address }), wallet)).rejects.toThrow(
      'names another job, seller, price',
    )
    expect(await sent()).toBe(before)
    expect((await market.getTask('job-forged', task.task_id)).status).toBe('pending_payment')
  })
})
