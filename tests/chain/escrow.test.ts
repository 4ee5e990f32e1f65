import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type Address, type Hex, keccak256, parseAbi, toHex } from 'viem'
import type { HDAccount } from 'viem/accounts'
import { type Anvil, ESCROW_ABI, paymentChain, USDC_ADDRESS } from '../support/anvil.ts'

const BALANCE_ABI = parseAbi(['function balanceOf(address) view returns (uint256)'])
const AMOUNT = 1_000_000n

let anvil: Anvil
let escrow: Address
let buyer: HDAccount
let seller: HDAccount
let stranger: HDAccount

beforeAll(async () => {
  const chain = await paymentChain(['buyer', 'seller', 'stranger'], {
    escrow: true,
    funded: ['buyer'],
    usdc: 100_000_000n,
  })
  ;({ anvil, escrow } = chain)
  ;({ buyer, seller, stranger } = chain.accounts)
})

afterAll(() => anvil?.stop())

const balanceOf = (owner: Address) =>
  anvil.publicClient.readContract({
    address: USDC_ADDRESS,
    abi: BALANCE_ABI,
    functionName: 'balanceOf',
    args: [owner],
  })

/** Sends an escrow call from `from` and waits for it; rejects when the escrow reverts. */
async function call(from: HDAccount, functionName: 'release' | 'claim', args: readonly unknown[]) {
  const hash = await anvil
    .walletFor(from)
    // biome-ignore lint/suspicious/noExplicitAny: the two functions take different tuples; viem checks them at run time
    .writeContract({ address: escrow, abi: ESCROW_ABI, functionName, args: args as any })
  return anvil.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 5 })
}

async function deposited(label: string, slaDeadline: bigint): Promise<Hex> {
  const taskId = keccak256(toHex(`${label}-${Math.random()}`))
  await anvil.approveUsdc(buyer, escrow, AMOUNT)
  await anvil.deposit(buyer, escrow, { taskId, seller: seller.address, amount: AMOUNT, slaDeadline })
  return taskId
}

describe('Escrow.sol', () => {
  test('behavior: the buyer releases a deposit to the seller, once', async () => {
    const taskId = await deposited('release', 4_000_000_000n)
    const before = await balanceOf(seller.address)
    await expect(call(stranger, 'release', [taskId])).rejects.toThrow()
    await call(buyer, 'release', [taskId])
    expect(await balanceOf(seller.address)).toBe(before + AMOUNT)
    await expect(call(buyer, 'release', [taskId])).rejects.toThrow('AlreadySettled')
  })

  test('behavior: only the seller claims, and only after the SLA deadline', async () => {
    const block = await anvil.publicClient.getBlock()
    const taskId = await deposited('claim', block.timestamp + 3_600n)
    await expect(call(seller, 'claim', [buyer.address, taskId])).rejects.toThrow('SlaNotOver')
    await anvil.testClient.increaseTime({ seconds: 7_200 })
    await anvil.mine(1)
    await expect(call(stranger, 'claim', [buyer.address, taskId])).rejects.toThrow('NotSeller')
    const before = await balanceOf(seller.address)
    await call(seller, 'claim', [buyer.address, taskId])
    expect(await balanceOf(seller.address)).toBe(before + AMOUNT)
  })

  test('error: a buyer cannot deposit twice under one taskId, nor deposit nothing', async () => {
    const taskId = await deposited('twice', 4_000_000_000n)
    await anvil.approveUsdc(buyer, escrow, AMOUNT)
    const again = { taskId, seller: seller.address, amount: AMOUNT, slaDeadline: 4_000_000_000n }
    await expect(anvil.deposit(buyer, escrow, again)).rejects.toThrow('DuplicateDeposit')
    await expect(
      anvil.deposit(buyer, escrow, { ...again, taskId: keccak256('0x01'), amount: 0n }),
    ).rejects.toThrow('ZeroAmount')
  })
})
