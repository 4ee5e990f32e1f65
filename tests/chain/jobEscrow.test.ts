import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import {
  type Abi,
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  type Hex,
  keccak256,
  parseEventLogs,
  toHex,
} from 'viem'
import type { HDAccount } from 'viem/accounts'
import artifacts from '../../packages/server/src/contracts/artifacts.json'
import { type Anvil, paymentChain } from '../support/anvil.ts'

const ABI = artifacts.JobEscrow.abi as Abi
const BUDGET = 2_500_000n // 2.5 USDC
const HOUR = 3600n
const REVIEW = 2n * HOUR

let anvil: Anvil
let escrow: Address
let buyer: HDAccount
let seller: HDAccount
let evaluator: HDAccount
let stranger: HDAccount
let otherBuyer: HDAccount
/** Gas of each step of the paths below, measured on anvil (printed at the end). */
const gas: Record<string, bigint> = {}

beforeAll(async () => {
  const chain = await paymentChain(['buyer', 'seller', 'evaluator', 'stranger', 'otherBuyer'], {
    funded: ['buyer', 'otherBuyer'],
  })
  ;({ anvil } = chain)
  ;({ buyer, seller, evaluator, stranger, otherBuyer } = chain.accounts)
  const deployed = await anvil.deployJobEscrow()
  escrow = deployed.address
  gas.deploy = deployed.gasUsed
  for (const account of [buyer, otherBuyer]) await anvil.approveUsdc(account, escrow, 10n ** 12n)
})

afterAll(() => {
  console.log(
    `JobEscrow gas on anvil: ${JSON.stringify(Object.fromEntries(Object.entries(gas).map(([k, v]) => [k, Number(v)])))}`,
  )
  anvil?.stop()
})

const now = async () => (await anvil.publicClient.getBlock()).timestamp

/** Moves the chain's clock by `seconds` and mines a block. */
async function wait(seconds: bigint) {
  await anvil.testClient.increaseTime({ seconds: Number(seconds) })
  await anvil.testClient.mine({ blocks: 1 })
}

/** Sends `functionName` from `account`; returns the receipt (status success), recording its gas under `step`. */
async function send(account: HDAccount, functionName: string, args: readonly unknown[], step?: string) {
  const hash = await anvil
    .walletFor(account)
    .writeContract({ address: escrow, abi: ABI, functionName, args } as never)
  const receipt = await anvil.publicClient.waitForTransactionReceipt({ hash })
  expect(receipt.status).toBe('success')
  if (step) gas[step] = receipt.gasUsed
  return receipt
}

/** The custom error a call from `account` reverts with (simulated: nothing is sent). */
async function refusal(account: HDAccount, functionName: string, args: readonly unknown[]): Promise<string> {
  try {
    await anvil.publicClient.simulateContract({
      account,
      address: escrow,
      abi: ABI,
      functionName,
      args,
    } as never)
  } catch (error) {
    if (error instanceof BaseError) {
      const reverted = error.walk((cause) => cause instanceof ContractFunctionRevertedError)
      if (reverted instanceof ContractFunctionRevertedError)
        return reverted.data?.errorName ?? reverted.reason ?? 'reverted'
    }
    throw error
  }
  return 'succeeded'
}

type Job = { client: Address; provider: Address; evaluator: Address; budget: bigint; status: number }
const STATUS = ['None', 'Funded', 'Submitted', 'Completed', 'Rejected', 'Expired']

async function jobOf(key: Hex): Promise<Job & { state: string }> {
  const [client, provider, judge, budget, , , , status] = (await anvil.publicClient.readContract({
    address: escrow,
    abi: ABI,
    functionName: 'jobs',
    args: [key],
  })) as [Address, Address, Address, bigint, bigint, bigint, bigint, number]
  return { client, provider, evaluator: judge, budget, status, state: STATUS[status] ?? '?' }
}

let counter = 0
/** Funds a new job of `client` for the seller (deliver within an hour, review for two); returns its key and id. */
async function funded(client: HDAccount = buyer, options: { evaluator?: Address; step?: string } = {}) {
  const jobId = keccak256(toHex(`task_${++counter}_${Date.now()}`))
  const deliverBy = (await now()) + HOUR
  const receipt = await send(
    client,
    'fund',
    [
      jobId,
      seller.address,
      options.evaluator ?? '0x0000000000000000000000000000000000000000',
      BUDGET,
      deliverBy,
      REVIEW,
    ],
    options.step,
  )
  const [event] = parseEventLogs({ abi: ABI, logs: receipt.logs, eventName: 'JobFunded' }) as unknown as {
    args: { key: Hex }
  }[]
  if (!event) throw new Error('no JobFunded event')
  return { key: event.args.key, jobId }
}

describe('JobEscrow: delivery, review, refunds (ERC-8183-shaped), on anvil', () => {
  test('behavior: deliver then accept: the buyer (default evaluator) completes and the seller is paid once', async () => {
    const before = await Promise.all([anvil.usdcOf(buyer.address), anvil.usdcOf(seller.address)])
    const { key } = await funded(buyer, { step: 'fund' })
    expect(await jobOf(key)).toMatchObject({ state: 'Funded', evaluator: buyer.address, budget: BUDGET })
    await send(seller, 'submit', [key, keccak256(toHex('https://results.example/1'))], 'submit')
    await send(buyer, 'complete', [key, keccak256(toHex('good'))], 'complete')
    expect((await jobOf(key)).state).toBe('Completed')
    expect(await Promise.all([anvil.usdcOf(buyer.address), anvil.usdcOf(seller.address)])).toEqual([
      (before[0] ?? 0n) - BUDGET,
      (before[1] ?? 0n) + BUDGET,
    ])
    for (const again of ['complete', 'reject', 'claimPayment', 'claimRefund'])
      expect(
        await refusal(buyer, again, again.startsWith('claim') ? [key] : [key, toHex(0, { size: 32 })]),
      ).toBe('WrongStatus')
  })

  test('behavior: deliver then reject by a named evaluator: the buyer is refunded; neither the buyer nor the seller may decide', async () => {
    const before = await anvil.usdcOf(buyer.address)
    const { key } = await funded(buyer, { evaluator: evaluator.address })
    await send(seller, 'submit', [key, toHex(1, { size: 32 })])
    const reason = toHex(2, { size: 32 })
    expect(await refusal(buyer, 'reject', [key, reason])).toBe('NotEvaluator')
    expect(await refusal(seller, 'complete', [key, reason])).toBe('NotEvaluator')
    const receipt = await send(evaluator, 'reject', [key, reason], 'reject')
    const [event] = parseEventLogs({ abi: ABI, logs: receipt.logs, eventName: 'JobRejected' }) as unknown as {
      args: { rejector: Address; reason: Hex }
    }[]
    expect(event?.args).toMatchObject({ rejector: evaluator.address, reason })
    expect((await jobOf(key)).state).toBe('Rejected')
    expect(await anvil.usdcOf(buyer.address)).toBe(before)
  })

  test('behavior: no delivery by the deadline: anyone refunds the buyer after it, nobody before it; a late delivery is refused', async () => {
    const before = await anvil.usdcOf(buyer.address)
    const { key } = await funded()
    expect(await refusal(stranger, 'claimRefund', [key])).toBe('NotExpired')
    expect(await refusal(buyer, 'claimRefund', [key])).toBe('NotExpired')
    // No rejection of work not delivered: the seller is not cancelled under it.
    expect(await refusal(buyer, 'reject', [key, toHex(0, { size: 32 })])).toBe('WrongStatus')
    await wait(HOUR)
    expect(await refusal(seller, 'submit', [key, toHex(1, { size: 32 })])).toBe('DeadlinePassed')
    await send(stranger, 'claimRefund', [key], 'claimRefund')
    expect((await jobOf(key)).state).toBe('Expired')
    expect(await anvil.usdcOf(buyer.address)).toBe(before)
  })

  test('behavior: silence past the review window pays the seller, by anyone; before it the seller cannot take it', async () => {
    const sellerBefore = await anvil.usdcOf(seller.address)
    const { key } = await funded()
    await send(seller, 'submit', [key, toHex(1, { size: 32 })])
    expect(await refusal(seller, 'claimPayment', [key])).toBe('ReviewNotOver')
    expect(await refusal(stranger, 'claimPayment', [key])).toBe('ReviewNotOver')
    // A delivery is never refunded as undelivered, even past the deadline.
    await wait(HOUR)
    expect(await refusal(stranger, 'claimRefund', [key])).toBe('WrongStatus')
    await wait(REVIEW)
    expect(await refusal(buyer, 'reject', [key, toHex(0, { size: 32 })])).toBe('ReviewOver')
    expect(await refusal(buyer, 'complete', [key, toHex(0, { size: 32 })])).toBe('ReviewOver')
    const receipt = await send(stranger, 'claimPayment', [key], 'claimPayment')
    const [event] = parseEventLogs({
      abi: ABI,
      logs: receipt.logs,
      eventName: 'JobCompleted',
    }) as unknown as {
      args: { bySilence: boolean }
    }[]
    expect(event?.args.bySilence).toBe(true)
    expect(await anvil.usdcOf(seller.address)).toBe(sellerBefore + BUDGET)
  })

  test('attack: only the seller delivers; another buyer cannot take a jobId; a key pays once; bad funding is refused', async () => {
    const { key, jobId } = await funded()
    expect(await refusal(stranger, 'submit', [key, toHex(1, { size: 32 })])).toBe('NotProvider')
    expect(await refusal(buyer, 'submit', [key, toHex(1, { size: 32 })])).toBe('NotProvider')
    // The same jobId by another buyer is another job; by the same buyer, refused.
    const deliverBy = (await now()) + HOUR
    const zero = '0x0000000000000000000000000000000000000000'
    expect(await refusal(buyer, 'fund', [jobId, seller.address, zero, BUDGET, deliverBy, REVIEW])).toBe(
      'KeyUsed',
    )
    expect(await refusal(otherBuyer, 'fund', [jobId, seller.address, zero, BUDGET, deliverBy, REVIEW])).toBe(
      'succeeded',
    )
    expect(
      await refusal(buyer, 'fund', [keccak256('0x01'), seller.address, zero, 0n, deliverBy, REVIEW]),
    ).toBe('ZeroAmount')
    expect(await refusal(buyer, 'fund', [keccak256('0x02'), zero, zero, BUDGET, deliverBy, REVIEW])).toBe(
      'ZeroProvider',
    )
    expect(
      await refusal(buyer, 'fund', [
        keccak256('0x03'),
        seller.address,
        zero,
        BUDGET,
        (await now()) - 1n,
        REVIEW,
      ]),
    ).toBe('DeadlinePassed')
    expect(await refusal(stranger, 'complete', [keccak256('0x04'), toHex(0, { size: 32 })])).toBe(
      'UnknownJob',
    )
    // The escrow holds exactly what its open jobs hold: nothing leaks between them.
    expect(await anvil.usdcOf(escrow)).toBeGreaterThanOrEqual(BUDGET)
  })
})
